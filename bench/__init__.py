"""Speed and memory figures of the running stack: scripts that print them, run as `python -m bench.<name>` from the
repository root. Never imported by the runtime."""
