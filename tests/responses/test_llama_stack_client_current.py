"""The current llama-stack-client (0.7.x) `Agent` helper with a client tool, unmodified, against our
Responses and Conversations API.

That client needs Python >= 3.12 and cannot share `.venv` with the 0.2.12 client of
tests/llama_stack/test_llama_stack_client.py, so it runs as a script (tests/support/clients/lsc_agent.py) in
`.venv-lsc`, which `make test` builds (tests/support/client_venvs.py); without a suitable Python these tests
skip and say so.
The helper is driven both ways its docs name: over a `LlamaStackClient(base_url=<root>)`, which parses
stream events into typed unions (and needs `response_id` on item events, spec §9b), and over a plain
`openai.OpenAI(base_url=<root>/v1)`. A second script (tests/support/clients/lsc_more.py) covers the rest of §9b:
parallel client calls in a `stream=False` turn, retrieve/list/delete, and an MCP server among the tools.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support.client_venvs import run_client
from tests.support.scripted_model import Reply, ScriptedModel, ThreadedServer, text, tool_call
from tests.support.stack import SCRIPTED_MODEL, Stack

pytestmark = pytest.mark.responses_clients

SCRIPT = Path(__file__).resolve().parents[1] / "support" / "clients" / "lsc_agent.py"
MORE = Path(__file__).resolve().parents[1] / "support" / "clients" / "lsc_more.py"
ANSWER = "It boils at -100."


@pytest.mark.parametrize("client", ["llama-stack-client", "openai"])
def test_agent_helper_runs_its_client_tool_and_continues_the_conversation(
    lsc_python: Path, stack: Stack, model: ScriptedModel, http: httpx.Client, client: str
) -> None:
    model.script(
        tool_call("get_boiling_point", {"liquid_name": "polyjuice", "celcius": True}),
        text(ANSWER),
        text("You are welcome."),
    )

    result = run_client(lsc_python, SCRIPT, stack.base_url, client, SCRIPTED_MODEL)

    tool_turn, plain_turn = result["turns"]
    assert result["calls"] == [{"liquid_name": "polyjuice", "celcius": True}]
    assert tool_turn["failed"] == [] and plain_turn["failed"] == []
    assert tool_turn["step_types"] == ["inference", "tool_execution", "inference"]
    assert tool_turn["tool_responses"] == [{"tool_name": "get_boiling_point", "content": "-100"}]
    assert tool_turn["final_text"].strip() == ANSWER and len(tool_turn["response_ids"]) == 2
    assert tool_turn["issued_calls"] == ["get_boiling_point"] and tool_turn["streamed_text"].strip() == ANSWER
    assert ANSWER in tool_turn["printed"]
    assert plain_turn["step_types"] == ["inference"] and plain_turn["final_text"].strip() == "You are welcome."
    # The model read the tool's (JSON-encoded) result after its call, and the second turn saw the first.
    assert len(model.requests) == 3
    resumed = model.requests[1]["messages"]
    assert resumed[-2]["tool_calls"][0]["function"]["name"] == "get_boiling_point"
    assert resumed[-1]["role"] == "tool" and resumed[-1]["content"] == "-100"
    later = [m.get("content") for m in model.requests[2]["messages"]]
    assert "Boiling point of polyjuice?" in later and "Thanks!" in later
    # The conversation holds both turns' items, in order.
    items = http.get(f"/v1/conversations/{result['session_id']}/items", params={"order": "asc"})
    assert items.status_code == 200, items.text
    assert [item["type"] for item in items.json()["data"]] == [
        "message",
        "function_call",
        "function_call_output",
        "message",
        "message",
        "message",
    ]


@pytest.mark.parametrize("client", ["llama-stack-client", "openai"])
def test_parallel_client_calls_a_non_streamed_turn_the_response_calls_and_an_mcp_server(
    lsc_python: Path, stack: Stack, model: ScriptedModel, mcp: ThreadedServer, client: str
) -> None:
    both = Reply(
        tool_calls=[
            ("get_boiling_point", {"liquid_name": "polyjuice"}),
            ("get_boiling_point", {"liquid_name": "water"}),
        ]
    )
    model.script(both, text(ANSWER), tool_call("add_numbers", {"a": 2, "b": 3}), text("2 + 3 = 5"))

    result = run_client(lsc_python, MORE, stack.base_url, client, SCRIPTED_MODEL, f"{mcp.allowed_url}/mcp")

    # create_turn(stream=False) returns the last response; both calls ran and were answered in one continuation.
    assert sorted(result["calls"]) == ["polyjuice", "water"]
    assert result["response"]["status"] == "completed" and result["response"]["text"].strip() == ANSWER
    assert sorted(m["content"] for m in model.requests[1]["messages"] if m["role"] == "tool") == ["-100", "100"]
    assert result["retrieved"] == "completed"
    assert result["items"] == [
        "message",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
        "message",
    ]
    if client == "llama-stack-client":
        assert result["response"]["id"] in result["listed"] and result["deleted"] is True
    assert result["after_delete"] == 404
    # The MCP server's tool runs inside the response: the helper shows it as a server-side tool step.
    mcp_turn = result["mcp"]
    assert mcp_turn["failed"] == [] and [text.strip() for text in mcp_turn["final_text"]] == ["2 + 3 = 5"]
    assert "add_numbers" in mcp_turn["server_calls"] and mcp_turn["step_types"][-1] == "inference"
