"""Tracing, metrics, logs: what an operator sees of the runtime (see the README's Observability section)."""
