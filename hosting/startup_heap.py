"""Keep what a process allocates as it starts out of the garbage collector's full passes.

A started API or worker holds some 250,000 long-lived objects (modules, pydantic and SQLAlchemy
schemas, the Temporal SDK) that are never garbage. CPython's full collection walks every one of
them each time, and with turns running it came every few seconds and stopped the process for
85-180 ms (streams stalled, a turn's workflow task waited). Frozen, they are left out of every
collection: the full passes after it took 20-40 ms (bench/benchmark, API process).
"""

from __future__ import annotations

import gc


def freeze() -> None:
    """Call once the process has started (imports done, connections open), before it serves."""
    gc.collect()
    gc.freeze()
