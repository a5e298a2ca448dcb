"""llama-stack's `builtin::code_interpreter` through the official llama-stack-client 0.2.12 `Agent`, unmodified,
with the offline model: each call is a tool_execution step run in the session's sandboxed container, whose
kernel keeps its state from one turn of the session to the next."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from llama_stack_client import Agent, BadRequestError, LlamaStackClient
from llama_stack_client.lib.agents.event_logger import EventLogger

from configuration.settings import OFFLINE_MODEL_ID
from tests.support.llama_agent import streamed, user_messages
from tests.support.stack import Stack


def _turn(agent: Agent, session_id: str, code: str) -> tuple[Any, str]:
    text = "call tool code_interpreter " + json.dumps({"code": code})
    chunks = list(streamed(agent.create_turn(messages=user_messages(text), session_id=session_id)))
    printed = "".join(str(log) for log in EventLogger().log(iter(chunks)))
    return chunks[-1].event.payload.turn, printed


def test_the_agent_runs_code_in_the_sessions_sandbox_and_keeps_its_state(llama: LlamaStackClient) -> None:
    agent = Agent(llama, model=OFFLINE_MODEL_ID, instructions="Compute.", tools=["builtin::code_interpreter"])
    session_id = agent.create_session("code")
    turn, printed = _turn(agent, session_id, "import os\nanswer = 6 * 7\nprint(answer, os.getuid())")
    assert [step.step_type for step in turn.steps] == ["inference", "tool_execution", "inference"]
    step = turn.steps[1]
    assert step.tool_calls[0].tool_name == "code_interpreter"
    assert "42 1000" in str(step.tool_responses[0].content)  # uid 1000: the sandbox's user
    assert "42 1000" in turn.output_message.content and "code_interpreter" in printed

    again, _ = _turn(agent, session_id, "answer + 1")
    assert "43" in str(again.steps[1].tool_responses[0].content)

    other = agent.create_session("another")
    fresh, _ = _turn(agent, other, "answer")
    assert "NameError" in str(fresh.steps[1].tool_responses[0].content)  # a session's kernel is its own


def test_without_a_sandbox_an_agent_with_the_code_interpreter_is_a_400(stack: Stack, tmp_path: Path) -> None:
    settings = stack.settings.model_copy(update={"sandbox_python_env": tmp_path / "missing-env"})
    with stack.other_api(settings) as url:
        client = LlamaStackClient(base_url=url, max_retries=0, timeout=30)
        config: Any = {"model": OFFLINE_MODEL_ID, "instructions": "x", "toolgroups": ["builtin::code_interpreter"]}
        with pytest.raises(BadRequestError) as refused:
            client.agents.create(agent_config=config)
        assert "no code sandbox" in str(refused.value)
