"""The code sandbox's costs on this machine; prints one JSON line (progress on stderr).

    .venv/bin/python -m bench.sandbox [--warm-calls 200] [--cold 10] [--containers 20]

- `warm_print_ms`: p50/p95 of a warm kernel's `print(1)` call, from `execute` to its result (the
  workspace scans before and after, the request, the reply, the output's end markers);
- `cold_start_ms`: a new container's kernel from nothing to ready (cgroup, bwrap, the interpreter and the
  kernel's helper; before any import of the code's), and `cold_first_call_ms` that plus a first `print(1)`;
- `concurrent`: as many containers at once, each started and running five cells (numpy and pandas imported,
  a sum computed): the errors (any cell with an error or a limit) and the whole's wall time.

It needs the sandbox (`make sandbox-env`). Workspaces live in a temporary directory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from code_sandbox.availability import find_sandbox
from code_sandbox.bubblewrap import Sandbox
from code_sandbox.kernel import PythonKernel
from code_sandbox.limits import SandboxLimits
from code_sandbox.workspaces import create_workspace

CELLS = (
    "import numpy as np\nimport pandas as pd",
    "values = np.arange(100_000)",
    "frame = pd.DataFrame({'v': values})",
    "int(frame['v'].sum())",
    "print(values.mean())",
)


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


async def warm(sandbox: Sandbox, data_dir: Path, calls: int) -> dict[str, float]:
    kernel = PythonKernel(sandbox, create_workspace(data_dir, "warm"), SandboxLimits())
    try:
        await kernel.execute("print(1)")
        samples = []
        for _ in range(calls):
            started = time.perf_counter()
            result = await kernel.execute("print(1)")
            samples.append((time.perf_counter() - started) * 1000)
            assert result.stdout == "1\n", result
    finally:
        await kernel.close()
    return {"p50": round(statistics.median(samples), 2), "p95": round(percentile(samples, 0.95), 2)}


async def cold(sandbox: Sandbox, data_dir: Path, containers: int) -> tuple[list[float], list[float]]:
    starts, first_calls = [], []
    for number in range(containers):
        kernel = PythonKernel(sandbox, create_workspace(data_dir, f"cold-{number}"), SandboxLimits())
        try:
            started = time.perf_counter()
            await kernel.start()
            starts.append((time.perf_counter() - started) * 1000)
            result = await kernel.execute("print(1)")
            first_calls.append((time.perf_counter() - started) * 1000)
            assert result.stdout == "1\n", result
        finally:
            await kernel.close()
    return starts, first_calls


async def concurrent(sandbox: Sandbox, data_dir: Path, containers: int) -> dict[str, float]:
    async def one(number: int) -> int:
        kernel = PythonKernel(sandbox, create_workspace(data_dir, f"many-{number}"), SandboxLimits())
        errors = 0
        try:
            for cell in CELLS:
                result = await kernel.execute(cell)
                errors += result.error is not None or result.limit is not None
        except Exception as exc:
            print(f"container {number}: {exc!r}", file=sys.stderr)
            errors += 1
        finally:
            await kernel.close()
        return errors

    started = time.perf_counter()
    errors = await asyncio.gather(*(one(number) for number in range(containers)))
    return {"containers": containers, "errors": sum(errors), "wall_s": round(time.perf_counter() - started, 2)}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--warm-calls", type=int, default=200)
    parser.add_argument("--cold", type=int, default=10)
    parser.add_argument("--containers", type=int, default=20)
    options = parser.parse_args()
    sandbox = find_sandbox()
    with tempfile.TemporaryDirectory(prefix="da-bench-sandbox-") as directory:
        data_dir = Path(directory)
        print("warm kernel …", file=sys.stderr)
        warm_ms = await warm(sandbox, data_dir, options.warm_calls)
        print("cold containers …", file=sys.stderr)
        starts, first_calls = await cold(sandbox, data_dir, options.cold)
        print(f"{options.containers} containers at once …", file=sys.stderr)
        many = await concurrent(sandbox, data_dir, options.containers)
    figures = {
        "warm_print_ms": warm_ms,
        "cold_start_ms": {"p50": round(statistics.median(starts), 1), "max": round(max(starts), 1)},
        "cold_first_call_ms": {"p50": round(statistics.median(first_calls), 1), "max": round(max(first_calls), 1)},
        "concurrent": many,
        "cgroups": sandbox.cgroups.describe(),
        "nproc": os.cpu_count(),
        "load_average": [round(load, 2) for load in os.getloadavg()],
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    asyncio.run(main())
