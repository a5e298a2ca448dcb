"""Running it: serve.py, settings, observability, the Temporal UI and CLI, scale-out, the worker in the API."""
