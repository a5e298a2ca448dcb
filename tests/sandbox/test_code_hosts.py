"""Two worker hosts on one Temporal and one store: a container's calls run on the host holding its workspace and
kernel even when the turn runs on the other host, and once that host is gone its next call is answered promptly
with a tool error naming it, and the turn goes on."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from pathlib import Path
from typing import Any

import openai

from api.openai.responses.create import turn_id_of
from code_sandbox.workspaces import workspace_path
from configuration.settings import Settings
from hosting.workers import Workers
from tests.support.sandbox import sandboxed_runner
from tests.support.stack import Stack
from worker import build_worker
from workflows.code_tools import RUN_CODE_ACTIVITY, host_task_queue
from workflows.contracts import turn_workflow_id

MODEL = "offline/echo"
START_TIMEOUT = 2.0


class Host:
    """One worker host's workers (the shared queue's and its own), running in the stack's event loop."""

    def __init__(self, stack: Stack, settings: Settings) -> None:
        self._stack = stack

        async def start() -> tuple[Workers, asyncio.Task[None]]:
            workers = build_worker(stack.client, settings, stack.store, sandboxed_runner())
            return workers, asyncio.create_task(workers.run())

        self.workers, self._run = stack.background.run(start())

    def stop_turns(self) -> None:
        """Its worker of the shared queue stops; its own queue's goes on (its kernels with it)."""
        shared, _ = self.workers.workers
        self._stack.background.run(shared.shutdown())

    def stop(self) -> None:
        async def stop() -> None:
            await self.workers.shutdown()
            await self._run

        self._stack.background.run(stop())


def _code(code: str) -> str:
    return "call tool code_interpreter " + json.dumps({"code": code})


def _call(response: Any) -> Any:
    assert response.status == "completed", response.error
    [call] = [item for item in response.output if item.type == "code_interpreter_call"]
    return call


def _code_call_queues(stack: Stack, response: Any) -> list[str]:
    """The task queues the response's turn sent its code calls to."""
    history = stack.closed_history(turn_workflow_id(turn_id_of(response.id)))
    return [
        event.activity_task_scheduled_event_attributes.task_queue.name
        for event in history.events
        if event.activity_task_scheduled_event_attributes.activity_type.name == RUN_CODE_ACTIVITY
    ]


def test_a_container_stays_on_its_host_and_a_gone_host_is_named(stack: Stack, tmp_path: Path) -> None:
    queue = f"hosts-{uuid.uuid4().hex[:8]}"
    base = stack.settings.model_copy(update={"task_queue": queue, "code_host_start_timeout": START_TIMEOUT})
    on_a = base.model_copy(update={"worker_host": "host-a", "data_dir": tmp_path / "host-a"})
    on_b = base.model_copy(update={"worker_host": "host-b"})
    host_a = Host(stack, on_a)
    host_b: Host | None = None
    try:
        with stack.other_api(on_b) as url:
            oai = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=120)
            container = oai.containers.create(name="on host a")
            tool: Any = {"type": "code_interpreter", "container": container.id}
            first = oai.responses.create(
                model=MODEL, tools=[tool], input=_code("x = 41\nopen('/workspace/mine.txt', 'w').write('from a')")
            )
            assert _call(first).status == "completed"
            assert (workspace_path(on_a.data_dir, container.id) / "mine.txt").read_text() == "from a"

            # Host A runs no more turns; host B runs them all now, and sends the container's calls to host A.
            host_a.stop_turns()
            host_b = Host(stack, on_b)
            second = oai.responses.create(
                model=MODEL, tools=[tool], input=_code("print(x + 1, open('/workspace/mine.txt').read())")
            )
            call = _call(second)
            assert call.status == "completed" and call.outputs is not None
            assert call.outputs[0].logs.strip() == "42 from a"  # host A's kernel and workspace
            assert _code_call_queues(stack, second) == [host_task_queue(queue, "host-a")]

            host_a.stop()
            began = time.monotonic()
            third = oai.responses.create(model=MODEL, tools=[tool], input=_code("print(x)"))
            waited = time.monotonic() - began
            gone = _call(third)
            assert gone.status == "failed" and gone.outputs is not None
            told = gone.outputs[0].logs
            assert "'host-a'" in told and container.id in told and "Nothing was run" in told, told
            assert third.output_text.startswith("Tool code_interpreter returned: Error: ")
            assert START_TIMEOUT <= waited < START_TIMEOUT + 20, waited

            # A new container is held by the host that is up.
            fresh: Any = {"type": "code_interpreter", "container": {"type": "auto"}}
            fourth = oai.responses.create(model=MODEL, tools=[fresh], input=_code("print(6 * 7)"))
            made = _call(fourth)
            assert made.outputs is not None and made.outputs[0].logs.strip() == "42"
            assert _code_call_queues(stack, fourth) == [host_task_queue(queue, "host-b")]
    finally:
        if host_b is not None:
            host_b.stop()
        host_a.stop()  # again, if it was: its shutdown is idempotent
