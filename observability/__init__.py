"""Tracing, metrics, logs: what an operator sees of the runtime (docs/operations.md).

May import configuration and domain only, so every layer above may use it."""
