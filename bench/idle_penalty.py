"""How much slower work runs on this machine right after it has been idle; prints one JSON line.

    .venv/bin/python -m bench.idle_penalty [--samples 30]

A turn's first delta follows an idle stretch (the previous turn's model streaming), and measured
there, Temporal's part of the path takes longer than the same path run back to back. This separates
the machine from the code: each figure is a median over samples taken after no gap, and after the
process slept for 10, 100 and 300 ms, of

- `python_loop_ms`: a fixed pure-Python loop (no I/O, no other process involved);
- `grpc_round_trip_ms`: DescribeNamespace on a Temporal dev server as `make run` configures it;
- `eager_start_to_activity_ms`: the eager start of a turn-like workflow (bench.benchmark's floor) until
  its activity is entered, worker in this process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from bench.benchmark.temporal_floor import eager_start_to_activity, floor_worker
from bench.common import start_dev_server, stop_process

GAPS_MS = (0, 10, 100, 300)


def python_loop() -> None:
    total = 0
    for number in range(20_000):
        total += number * number


async def median_after_gaps(measure: Callable[[], Awaitable[float]], samples: int) -> dict[str, float]:
    """{gap: median ms}, each sample taken after sleeping `gap` ms (after a few unmeasured ones)."""
    figures = {}
    for gap in GAPS_MS:
        taken = []
        for index in range(samples + 3):
            await asyncio.sleep(gap / 1000)
            milliseconds = await measure()
            if index >= 3:
                taken.append(milliseconds)
        figures[f"after_{gap}_ms_idle"] = round(statistics.median(taken), 3)
    return figures


async def main(samples: int) -> dict[str, object]:
    temporal, port = start_dev_server(Path(tempfile.mkdtemp(prefix="idle-penalty-")))
    try:
        client = await Client.connect(f"127.0.0.1:{port}", data_converter=pydantic_data_converter)
        queue = f"idle-{uuid.uuid4().hex[:8]}"

        async def loop_ms() -> float:
            started = time.perf_counter()
            python_loop()
            return (time.perf_counter() - started) * 1000

        async def rpc_ms() -> float:
            started = time.perf_counter()
            await client.workflow_service.describe_namespace(DescribeNamespaceRequest(namespace="default"))
            return (time.perf_counter() - started) * 1000

        async def start_ms() -> float:
            return await eager_start_to_activity(client, queue) * 1000

        async with floor_worker(client, queue):
            return {
                "benchmark": "idle_penalty",
                "samples": samples,
                "python_loop_ms": await median_after_gaps(loop_ms, samples),
                "grpc_round_trip_ms": await median_after_gaps(rpc_ms, samples),
                "eager_start_to_activity_ms": await median_after_gaps(start_ms, samples),
            }
    finally:
        stop_process(temporal)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=30, help="measured samples per figure and gap")
    print(json.dumps(asyncio.run(main(parser.parse_args().samples))))
