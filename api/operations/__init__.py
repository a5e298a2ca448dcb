"""What operators call, whatever the dialect: health, readiness and metrics.

May import the shared edge and the layers below api/; never a dialect."""
