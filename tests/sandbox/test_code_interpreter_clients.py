"""openai-agents' `CodeInterpreterTool`, unmodified, through `OpenAIResponsesModel` against our Responses API;
and the tool refused with a clear 400 where the host has no sandbox (nothing runs unsandboxed)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from agents import Agent, CodeInterpreterTool, OpenAIResponsesModel, Runner, set_tracing_disabled
from agents.items import ToolCallItem
from openai import AsyncOpenAI
from openai.types.responses import ResponseCodeInterpreterToolCall

from configuration.settings import OFFLINE_MODEL_ID
from tests.support.stack import Stack

pytestmark = pytest.mark.responses_clients


@pytest.fixture(autouse=True)
def _no_tracing() -> None:
    set_tracing_disabled(True)  # otherwise the SDK uploads traces to OpenAI


@pytest.fixture
async def client(stack: Stack) -> AsyncIterator[AsyncOpenAI]:
    http_client = httpx.AsyncClient(timeout=120)
    client = AsyncOpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0, http_client=http_client)  # type: ignore[arg-type]
    yield client
    await client.close()


async def test_openai_agents_code_interpreter_tool_runs_in_the_sandbox(client: AsyncOpenAI) -> None:
    tool = CodeInterpreterTool(tool_config={"type": "code_interpreter", "container": {"type": "auto"}})
    model = OpenAIResponsesModel(model=OFFLINE_MODEL_ID, openai_client=client)
    agent = Agent(name="analyst", instructions="Compute.", model=model, tools=[tool])
    asked = "call tool code_interpreter " + json.dumps({"code": "import os\nprint(sum(range(10)), os.getuid())"})
    result = await Runner.run(agent, asked)
    calls = [item.raw_item for item in result.new_items if isinstance(item, ToolCallItem)]
    assert len(calls) == 1 and isinstance(calls[0], ResponseCodeInterpreterToolCall)
    assert calls[0].outputs is not None and calls[0].outputs[0].logs.strip() == "45 1000"  # the sandbox's uid
    assert "45 1000" in str(result.final_output)


def test_without_a_sandbox_the_tool_is_a_400_and_nothing_is_made(stack: Stack, tmp_path: Path) -> None:
    settings = stack.settings.model_copy(update={"sandbox_python_env": tmp_path / "missing-env"})
    with stack.other_api(settings) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        before = [container.id for container in client.containers.list()]
        tool: Any = {"type": "code_interpreter", "container": {"type": "auto"}}
        with pytest.raises(openai.BadRequestError) as refused:
            client.responses.create(model=OFFLINE_MODEL_ID, tools=[tool], input="call tool code_interpreter")
        assert refused.value.code == "sandbox_unavailable"
        assert "no code sandbox" in refused.value.message and "make sandbox-env" in refused.value.message
        assert [container.id for container in client.containers.list()] == before
