"""The chat requests llama-stack turns send, byte for byte: every inference builds its request from a
TurnSettings and the conversation in one place (activities/inference.py), and a llama-stack agent's config
becomes a TurnSettings on the way (domain/agents.py). tests/llama_stack/golden/llama_chat_requests.json holds what the
runtime sent before the two paths became one; it must not change."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from tests.support.rest import BOILING_TOOL, create_agent, create_session
from tests.support.scripted_model import ScriptedModel, text, tool_call

GOLDEN = Path(__file__).parent / "golden" / "llama_chat_requests.json"
SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
UNITS_TOOL = {
    "name": "convert_units",
    "parameters": [
        {"name": "value", "parameter_type": "float", "description": "", "required": True},
        {"name": "unit", "parameter_type": "string", "description": "Target unit", "required": False, "default": "K"},
        {"name": "exact", "parameter_type": "bool", "required": False},
    ],
}


def _turns(http: httpx.Client, **config: Any) -> str:
    agent_id = create_agent(http, **config)
    return f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"


def _ask(http: httpx.Client, turns: str, question: str, **body: Any) -> dict[str, Any]:
    answered = http.post(turns, json={"messages": [{"role": "user", "content": question}], **body})
    answered.raise_for_status()
    return answered.json()


def _client_tools_greedy_schema_named_choice(http: httpx.Client, model: ScriptedModel) -> list[dict[str, Any]]:
    """Client tools, greedy sampling with max_tokens and stop, a json_schema response format, a named
    tool_choice; a pause and its resume; then a second turn of the session (history) with its own tool_config."""
    model.script(tool_call("get_boiling_point", {"liquid_name": "water"}), text('{"answer": 100}'), text("again"))
    turns = _turns(
        http,
        client_tools=[BOILING_TOOL, UNITS_TOOL],
        sampling_params={"strategy": {"type": "greedy"}, "max_tokens": 64, "stop": ["END"]},
        response_format={"type": "json_schema", "json_schema": SCHEMA},
        tool_config={"tool_choice": "get_boiling_point"},
    )
    paused = _ask(http, turns, "How hot does water boil?")
    call_id = paused["output_message"]["tool_calls"][0]["call_id"]
    answer = {"call_id": call_id, "tool_name": "get_boiling_point", "content": "100"}
    http.post(f"{turns}/{paused['turn_id']}/resume", json={"tool_responses": [answer]}).raise_for_status()
    _ask(http, turns, "And again?", tool_config={"tool_choice": "required"})
    return list(model.requests)


def _top_p_no_instructions_no_tools(http: httpx.Client, model: ScriptedModel) -> list[dict[str, Any]]:
    """top_p sampling with a temperature, no instructions, tool_choice none (no tools offered), a grammar
    response format (not passed on)."""
    model.script(text("fine"))
    turns = _turns(
        http,
        instructions="",
        sampling_params={"strategy": {"type": "top_p", "temperature": 0.7, "top_p": 0.9}, "max_tokens": 0},
        response_format={"type": "grammar", "bnf": {"root": "x"}},
        tool_config={"tool_choice": "none"},
    )
    _ask(http, turns, "Anything?")
    return list(model.requests)


def _server_tools_top_k(http: httpx.Client, model: ScriptedModel) -> list[dict[str, Any]]:
    """A builtin toolgroup's server tool beside a client tool, top_k sampling (nothing sent for it)."""
    model.script(tool_call("calculate", {"expression": "6*7"}), text("42"))
    turns = _turns(
        http, toolgroups=["builtin::calculator"], sampling_params={"strategy": {"type": "top_k", "top_k": 3}}
    )
    _ask(http, turns, "What is 6*7?")
    return list(model.requests)


SCENARIOS = [_client_tools_greedy_schema_named_choice, _top_p_no_instructions_no_tools, _server_tools_top_k]


def _sent(http: httpx.Client, model: ScriptedModel) -> dict[str, list[str]]:
    """Each scenario's request bodies as the model received them, JSON-encoded with sorted keys: every value
    and type as sent (0.0 is not 0), in an order that does not depend on how the provider lays out a body."""
    return {
        scenario.__name__: [json.dumps(body, separators=(",", ":"), sort_keys=True) for body in scenario(http, model)]
        for scenario in SCENARIOS
    }


def test_llama_stack_turns_send_the_chat_requests_they_always_sent(http: httpx.Client, model: ScriptedModel) -> None:
    sent = _sent(http, model)
    assert sent == json.loads(GOLDEN.read_text())
