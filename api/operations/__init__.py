"""What operators call, whatever the dialect: health, readiness and metrics."""
