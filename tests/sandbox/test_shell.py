"""The Responses `shell` tool in a sandboxed container, through the unmodified openai SDK and openai-agents'
`ShellTool`: the commands run in the container (files kept there), the shell_call and shell_call_output items
and their streamed events; a caller-run (`local`) shell pauses the turn until the caller sends its output."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import openai
import pytest
from agents import Agent, OpenAIResponsesModel, Runner, ShellCommandRequest, ShellTool, set_tracing_disabled
from openai import AsyncOpenAI

from configuration.settings import OFFLINE_MODEL_ID
from tests.support.stack import Stack


@pytest.fixture
def oai(stack: Stack) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0, timeout=120)


def _commands(*commands: str) -> str:
    return "call tool shell " + json.dumps({"commands": list(commands)})


def test_a_shell_turn_runs_in_the_container(oai: openai.OpenAI) -> None:
    container = oai.containers.create(name="shell")
    tool: Any = {"type": "shell", "environment": {"type": "container_reference", "container_id": container.id}}
    response = oai.responses.create(
        model=OFFLINE_MODEL_ID, tools=[tool], input=_commands("echo hi > /workspace/out.txt; id -u", "exit 3")
    )
    assert response.status == "completed", response.error
    kinds = [item.type for item in response.output]
    assert kinds == ["shell_call", "shell_call_output", "message"]
    call, output = response.output[0], response.output[1]
    assert call.type == "shell_call" and call.action.commands[1] == "exit 3"
    assert output.type == "shell_call_output" and output.call_id == call.call_id
    assert output.output[0].stdout == "1000\n" and output.output[0].outcome.type == "exit"
    assert output.output[1].outcome.type == "exit" and output.output[1].outcome.exit_code == 3
    written = {file.path: file for file in oai.containers.files.list(container.id)}
    assert written["/workspace/out.txt"].source == "assistant"
    content = oai.containers.files.content.retrieve(written["/workspace/out.txt"].id, container_id=container.id)
    assert content.content == b"hi\n"

    with oai.responses.stream(model=OFFLINE_MODEL_ID, tools=[tool], input=_commands("cat /workspace/out.txt")) as s:
        events = list(s)
    shell_events = [event.type for event in events if event.type.startswith("response.shell_call")]
    assert shell_events == [
        "response.shell_call_command.added",
        "response.shell_call_command.delta",
        "response.shell_call_command.done",
        "response.shell_call_output_content.delta",
        "response.shell_call_output_content.done",
    ]
    done = next(event for event in events if event.type == "response.shell_call_output_content.done")
    assert done.output[0].stdout == "hi\n"


def test_a_local_shell_turn_pauses_for_the_callers_output_and_resumes(oai: openai.OpenAI) -> None:
    tool: Any = {"type": "shell", "environment": {"type": "local"}}
    first = oai.responses.create(model=OFFLINE_MODEL_ID, tools=[tool], input=_commands("uname -n"))
    assert first.status == "completed", first.error
    [call] = first.output
    assert call.type == "shell_call" and call.action.commands == ["uname -n"]
    assert call.environment is not None and call.environment.type == "local"
    output: Any = {
        "type": "shell_call_output",
        "call_id": call.call_id,
        "output": [{"stdout": "callers-laptop\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}],
    }
    second = oai.responses.create(model=OFFLINE_MODEL_ID, tools=[tool], previous_response_id=first.id, input=[output])
    assert second.status == "completed", second.error
    assert "callers-laptop" in second.output_text and "exit code 0" in second.output_text
    unknown: Any = {**output, "call_id": "call_nobody"}
    with pytest.raises(openai.BadRequestError):
        oai.responses.create(model=OFFLINE_MODEL_ID, tools=[tool], previous_response_id=second.id, input=[unknown])


@pytest.fixture
async def client(stack: Stack) -> AsyncIterator[AsyncOpenAI]:
    set_tracing_disabled(True)
    http_client = httpx.AsyncClient(timeout=120)
    client = AsyncOpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0, http_client=http_client)  # type: ignore[arg-type]
    yield client
    await client.close()


@pytest.mark.responses_clients
async def test_openai_agents_hosted_shell_tool_runs_in_an_auto_container(client: AsyncOpenAI) -> None:
    tool = ShellTool(environment={"type": "container_auto"})
    agent = Agent(name="ops", model=OpenAIResponsesModel(model=OFFLINE_MODEL_ID, openai_client=client), tools=[tool])
    result = await Runner.run(agent, _commands("expr 6 \\* 7"))
    assert "42" in str(result.final_output)


@pytest.mark.responses_clients
async def test_openai_agents_local_shell_tool_runs_the_callers_executor(client: AsyncOpenAI) -> None:
    ran: list[list[str]] = []

    async def executor(request: ShellCommandRequest) -> str:
        ran.append(request.data.action.commands)
        return "ran on the caller's side"

    tool = ShellTool(executor=executor)
    agent = Agent(name="ops", model=OpenAIResponsesModel(model=OFFLINE_MODEL_ID, openai_client=client), tools=[tool])
    result = await Runner.run(agent, _commands("ls /home"))
    assert ran == [["ls /home"]]
    assert "ran on the caller's side" in str(result.final_output)
