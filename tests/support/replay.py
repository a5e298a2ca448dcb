"""Replaying a recorded workflow history on the current code, in the runner the worker uses and in Temporal's
sandbox: how the suite proves a change to workflow code keeps histories of the previous release replayable."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer, WorkflowRunner

from tests.support.sandbox import sandboxed_runner
from worker import workflow_runner

RUNNERS: dict[str, Callable[[], WorkflowRunner]] = {
    "as_the_worker_runs_it": workflow_runner,
    "in_the_sandbox": sandboxed_runner,
}


def replay_failure(workflow: type, path: Path, runner: str) -> Exception | None:
    """Why the history recorded at `path` does not replay on `workflow` in `runner`, or None when it does."""
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    replayer = Replayer(workflows=[workflow], data_converter=pydantic_data_converter, workflow_runner=RUNNERS[runner]())
    return asyncio.run(replayer.replay_workflow(history, raise_on_replay_failure=False)).replay_failure
