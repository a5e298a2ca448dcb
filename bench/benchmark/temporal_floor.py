"""Temporal's floor: the smallest useful workflow on the same dev server, and a turn-like eager start
to its first activity."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from workflows import search_attributes

# --- Temporal's floor: the smallest useful workflow, run on the same dev server --------------


_floor_activity_entered: dict[str, float] = {}
"""perf_counter() at each floor activity's start, by workflow id."""


@activity.defn(name="bench_floor_echo")
async def floor_echo(value: str) -> str:
    _floor_activity_entered[activity.info().workflow_id or ""] = time.perf_counter()
    return value


@workflow.defn(name="BenchFloor")
class FloorWorkflow:
    """One activity and nothing else: the least a turn (which needs at least one) could cost."""

    @workflow.run
    async def run(self, value: str) -> str:
        return await workflow.execute_activity(floor_echo, value, start_to_close_timeout=timedelta(seconds=10))


@dataclass
class TemporalFloor:
    one_activity: list[float]
    """Client → workflow task → activity → workflow task → result, end to end."""
    eager_start_to_activity: list[float]
    """An eager start as a turn's (its search attributes and summary) → the activity entered."""


def _turn_like_start() -> dict[str, Any]:
    """What TurnGateway adds to a turn's start (workflows/search_attributes.py), with ids of a turn's length."""
    ids = str(uuid.uuid4())
    attributes = [
        SearchAttributePair(search_attributes.AGENT_ID, ids),
        SearchAttributePair(search_attributes.SESSION_ID, ids),
        SearchAttributePair(search_attributes.TURN_STATUS, "running"),
        SearchAttributePair(search_attributes.TENANT_ID, "default"),
    ]
    return {
        "search_attributes": TypedSearchAttributes(attributes),
        "static_summary": "Say hello.",
        "static_details": f"**Agent:** `{ids}`  \n**Session:** `{ids}`  \n**Turn:** `{ids}`",
        "request_eager_start": True,
    }


def floor_worker(client: Client, queue: str) -> Worker:
    """The floor's workflow and activity on `queue`, in this process (so an eager start is honoured).
    Unsandboxed, so the figures are the server round trips and SDK, not sandbox set-up."""
    return Worker(
        client,
        task_queue=queue,
        workflows=[FloorWorkflow],
        activities=[floor_echo],
        workflow_runner=UnsandboxedWorkflowRunner(),
    )


async def eager_start_to_activity(client: Client, queue: str) -> float:
    """Seconds from an eager start as a turn's (its search attributes and summary) to its activity entered,
    with `floor_worker` running on `queue`."""
    workflow_id = f"{queue}-eager-{uuid.uuid4().hex[:8]}"
    started = time.perf_counter()
    handle = await client.start_workflow(FloorWorkflow.run, "x", id=workflow_id, task_queue=queue, **_turn_like_start())
    await handle.result()
    return _floor_activity_entered.pop(workflow_id) - started


async def measure_temporal_floor(address: str, iterations: int, warmup: int) -> TemporalFloor:
    """Both floors, sequentially, on one worker in this process."""
    client = await Client.connect(address, data_converter=pydantic_data_converter)
    queue = f"bench-floor-{uuid.uuid4().hex[:8]}"
    floor = TemporalFloor([], [])
    async with floor_worker(client, queue):
        for index in range(warmup + iterations):
            started = time.perf_counter()
            await client.execute_workflow(FloorWorkflow.run, "x", id=f"{queue}-{index}", task_queue=queue)
            if index >= warmup:
                floor.one_activity.append(time.perf_counter() - started)
        for index in range(warmup + iterations):
            took = await eager_start_to_activity(client, queue)
            if index >= warmup:
                floor.eager_start_to_activity.append(took)
    return floor
