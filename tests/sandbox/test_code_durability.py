"""A code call cut by its worker's SIGKILL is never run again: the turn answers that call with an
"interrupted" tool error saying the kernel restarted, the model goes on, the side effect happened once, the
container's files are intact, and the next call in the container works."""

from __future__ import annotations

import json
import time
from typing import Any

import openai
import pytest

from code_sandbox.workspaces import workspace_path
from tests.support.processes import EVENT_SECONDS, ProcessStack, wait_until
from tests.support.scripted_model import text, tool_call
from tests.support.stack import SCRIPTED_MODEL

pytestmark = pytest.mark.processes

LONG_CELL = """
import pathlib, time
counter = pathlib.Path('/workspace/counter')
counter.write_text(str(int(counter.read_text()) + 1) if counter.exists() else '1')
time.sleep(60)
"""


def _finished(client: openai.OpenAI, response_id: str) -> openai.types.responses.Response:
    deadline = time.monotonic() + 120
    while (response := client.responses.retrieve(response_id)).status in ("queued", "in_progress"):
        assert time.monotonic() < deadline, response
        time.sleep(0.2)
    return response


@pytest.mark.timeout(300)
def test_a_cell_cut_by_a_worker_kill_is_answered_interrupted_and_never_run_twice(processes: ProcessStack) -> None:
    client = openai.OpenAI(base_url=f"{processes.url}/v1", api_key="unused", max_retries=2, timeout=60)
    container = client.containers.create(name="durable")
    client.containers.files.create(container.id, file=("kept.txt", b"still here"))
    workspace = workspace_path(processes.data_dir, container.id)
    counter = workspace / "counter"
    tool: Any = {"type": "code_interpreter", "container": container.id}

    processes.model.script(tool_call("code_interpreter", {"code": LONG_CELL}), text("The cell was interrupted."))
    response = client.responses.create(model=SCRIPTED_MODEL, input="Count.", tools=[tool], background=True)
    wait_until(lambda: counter.exists(), "the cell running", EVENT_SECONDS)
    processes.kill(processes.worker)
    processes.start_worker()

    response = _finished(client, response.id)
    assert response.status == "completed", response.error
    [call] = [item for item in response.output if item.type == "code_interpreter_call"]
    assert call.status == "failed" and call.outputs is not None
    assert "interrupted" in call.outputs[0].logs and "kernel restarted" in call.outputs[0].logs
    told = processes.model.requests[-1]["messages"][-1]
    assert told["role"] == "tool" and "not run again" in json.dumps(told["content"])
    assert response.output_text.strip() == "The cell was interrupted."
    assert counter.read_text() == "1"  # the cell ran once
    assert (workspace / "kept.txt").read_bytes() == b"still here"

    processes.model.script(
        tool_call("code_interpreter", {"code": "print(open('/workspace/counter').read())"}), text("Read it.")
    )
    after = client.responses.create(model=SCRIPTED_MODEL, input="Read.", tools=[tool])
    [read] = [item for item in after.output if item.type == "code_interpreter_call"]
    assert read.status == "completed" and read.outputs is not None and read.outputs[0].logs.strip() == "1"
    assert counter.read_text() == "1"
