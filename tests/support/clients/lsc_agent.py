"""llama-stack-client 0.7.x's `Agent` helper with a client tool, unmodified, against our API.

Runs in `.venv-lsc` (tests/support/client_venvs.py), not in the suite's venv: `python lsc_agent.py <root URL>
<llama-stack-client|openai> <model>`. One session, two streamed turns: the first calls the client tool,
which the helper runs and answers with a `function_call_output` in the same conversation; the second is
plain text. The last output line is a JSON summary the test asserts on; the helper's printed log goes
to stderr, which the test shows if it fails.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import boiling_point  # beside this script
import openai
from llama_stack_client import Agent, LlamaStackClient
from llama_stack_client.lib.agents.client_tool import client_tool
from llama_stack_client.lib.agents.event_logger import EventLogger
from llama_stack_client.lib.agents.turn_events import (
    AgentStreamChunk,
    StepCompleted,
    StepProgress,
    TextDelta,
    ToolCallIssuedDelta,
    TurnCompleted,
    TurnFailed,
)

calls = boiling_point.calls
get_boiling_point = client_tool(boiling_point.get_boiling_point)


def _turn(agent: Agent, session_id: str, question: str) -> dict[str, Any]:
    chunks: list[AgentStreamChunk] = list(
        agent.create_turn(messages=[{"role": "user", "content": question}], session_id=session_id, stream=True)
    )
    printed = "".join(EventLogger().log(iter(chunks)))
    print(printed, file=sys.stderr)
    events = [chunk.event for chunk in chunks]
    completed = [event for event in events if isinstance(event, TurnCompleted)]
    failed = [event.error_message for event in events if isinstance(event, TurnFailed)]
    steps = [event for event in events if isinstance(event, StepCompleted)]
    tool_responses = [
        response for step in steps if step.step_type == "tool_execution" for response in step.result.tool_responses
    ]
    deltas = [event.delta for event in events if isinstance(event, StepProgress)]
    return {
        "event_types": [event.event_type for event in events],
        "streamed_text": "".join(delta.text for delta in deltas if isinstance(delta, TextDelta)),
        "issued_calls": [delta.tool_name for delta in deltas if isinstance(delta, ToolCallIssuedDelta)],
        "step_types": [step.step_type for step in steps],
        "tool_responses": [{"tool_name": r["tool_name"], "content": r["content"]} for r in tool_responses],
        "final_text": completed[-1].final_text if completed else None,
        "response_ids": completed[-1].response_ids if completed else [],
        "failed": failed,
        "printed": printed,
    }


def client_for(root: str, kind: str) -> Any:
    """The client the `Agent` helper is given: llama-stack-client's own, or `openai.OpenAI` on our /v1."""
    if kind == "llama-stack-client":
        return LlamaStackClient(base_url=root, max_retries=0, timeout=60)
    return openai.OpenAI(base_url=f"{root}/v1", api_key="not-checked", max_retries=0, timeout=60)


def main(root: str, kind: str, model: str) -> None:
    agent = Agent(
        client_for(root, kind), model=model, instructions="You are a helpful assistant", tools=[get_boiling_point]
    )
    session_id = agent.create_session("lsc-current")
    tool_turn = _turn(agent, session_id, "Boiling point of polyjuice?")
    plain_turn = _turn(agent, session_id, "Thanks!")
    print(json.dumps({"session_id": session_id, "calls": calls, "turns": [tool_turn, plain_turn]}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
