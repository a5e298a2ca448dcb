"""Safe by default: tenancy, secrets, the outbound policy, limits, guards, error bodies, schema fuzzing."""
