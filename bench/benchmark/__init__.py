"""The benchmark of the running stack: `python -m bench.benchmark [--quick | --responses-only]` (see __main__.py)."""
