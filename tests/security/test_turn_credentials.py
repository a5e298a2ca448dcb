"""MCP credentials a caller sends with a turn (`X-LlamaStack-Provider-Data` mcp_headers) reach the
tenant's MCP server for the turn's tool calls, and nowhere else: not the store's rows (they are kept
encrypted only while the turn runs or waits), not the workflow's history, not events or responses."""

from __future__ import annotations

import json
from typing import Any

import httpx
from cryptography.fernet import Fernet

from tests.support import mcp_server
from tests.support.rest import BOILING_TOOL, create_agent, create_session, final_turn
from tests.support.scripted_model import ScriptedModel, ThreadedServer, text, tool_call
from tests.support.stack import Stack
from workflows.contracts import turn_workflow_id

SECRET_TOKEN = mcp_server.SECRET.removeprefix("Bearer ")
PROVIDER_DATA = "X-LlamaStack-Provider-Data"


def _credentials(mcp: ThreadedServer) -> dict[str, str]:
    mcp_headers = {f"{mcp.allowed_url}/mcp": {"Authorization": mcp_server.SECRET}}
    return {PROVIDER_DATA: json.dumps({"mcp_headers": mcp_headers})}


def _turns(http: httpx.Client, toolgroup: str, client_tools: list[Any] | None = None) -> str:
    agent_id = create_agent(http, toolgroups=[toolgroup], client_tools=client_tools or [])
    return f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"


def _ask(stream: bool = True) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": "open the vault"}], "stream": stream}


def _vault_answers(turn: dict[str, Any]) -> list[str]:
    return [
        response["content"]
        for step in turn["steps"]
        if step["step_type"] == "tool_execution"
        for response in step["tool_responses"]
        if response["tool_name"] == "open_vault"
    ]


def _kept(stack: Stack, turn_id: str) -> str | None:
    return stack.background.run(stack.store.turns.turn_credentials(turn_id))


def test_a_turns_mcp_credentials_reach_its_server_and_nothing_else(
    stack: Stack, http: httpx.Client, model: ScriptedModel, mcp: ThreadedServer, toolgroup: str
) -> None:
    model.script(tool_call("open_vault"), text("It is open."))
    mcp_server.AUTHORIZATIONS.clear()
    response = http.post(_turns(http, toolgroup), json=_ask(), headers=_credentials(mcp))

    assert response.status_code == 200, response.text
    turn = final_turn(response)
    assert turn["status"] == "completed"
    assert _vault_answers(turn) == ["the vault is open"]
    assert mcp_server.SECRET in mcp_server.AUTHORIZATIONS
    assert [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"] == ["the vault is open"]
    # Shown nowhere: not in the stream, the stored turn, the store, the workflow's history.
    path = response.request.url.path
    shown = (
        response.text + http.get(f"{path}/{turn['turn_id']}").text + http.get(f"{path}/{turn['turn_id']}/events").text
    )
    assert SECRET_TOKEN not in shown
    assert SECRET_TOKEN not in stack.store_text()
    history = stack.closed_history(turn_workflow_id(turn["turn_id"]))
    assert len(history.events) > 10 and SECRET_TOKEN not in history.to_json()
    # The turn has ended: its encrypted copy is gone.
    assert _kept(stack, turn["turn_id"]) is None


def test_without_credentials_the_call_fails_for_the_model_and_the_turn_completes(
    http: httpx.Client, model: ScriptedModel, toolgroup: str
) -> None:
    model.script(tool_call("open_vault"), text("I could not open it."))
    turn = final_turn(http.post(_turns(http, toolgroup), json=_ask()))

    assert turn["status"] == "completed"
    [answer] = _vault_answers(turn)
    assert "needs the tenant's Authorization header" in answer
    assert [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"] == [answer]


def _pause_then_open_the_vault(http: httpx.Client, model: ScriptedModel, toolgroup: str) -> str:
    """A session whose next turn pauses on a client tool, then calls the vault after the resume; its turns URL."""
    model.script(
        tool_call("get_boiling_point", {"liquid_name": "polyjuice"}),
        tool_call("open_vault"),
        text("Boils at -100 and the vault is open."),
    )
    return _turns(http, toolgroup, client_tools=[BOILING_TOOL])


def test_a_paused_turn_keeps_its_credentials_until_it_ends(
    stack: Stack, http: httpx.Client, model: ScriptedModel, mcp: ThreadedServer, toolgroup: str
) -> None:
    turns = _pause_then_open_the_vault(http, model, toolgroup)
    paused = http.post(turns, json=_ask(stream=False), headers=_credentials(mcp)).json()
    assert paused["status"] == "awaiting_input"
    assert _kept(stack, paused["turn_id"]) is not None

    call_id = paused["output_message"]["tool_calls"][0]["call_id"]
    results = [{"call_id": call_id, "tool_name": "get_boiling_point", "content": "-100"}]
    resumed = http.post(f"{turns}/{paused['turn_id']}/resume", json={"tool_responses": results, "stream": True})

    turn = final_turn(resumed)
    assert turn["status"] == "completed"
    assert _vault_answers(turn) == ["the vault is open"]
    assert SECRET_TOKEN not in resumed.text
    assert _kept(stack, paused["turn_id"]) is None


def test_credentials_the_worker_cannot_decrypt_fail_the_call_with_a_clear_message(
    stack: Stack, model: ScriptedModel, mcp: ThreadedServer
) -> None:
    other_key = stack.settings.model_copy(update={"credentials_key": Fernet.generate_key().decode()})
    model.script(tool_call("open_vault"), text("I could not open it."))
    with (
        stack.other_api(other_key) as url,
        httpx.Client(base_url=url, timeout=120) as http,
        mcp_server.registered_toolgroup(http, mcp) as toolgroup,
    ):
        turn = final_turn(http.post(_turns(http, toolgroup), json=_ask(), headers=_credentials(mcp)))

    assert turn["status"] == "completed"
    [answer] = _vault_answers(turn)
    assert "cannot be decrypted" in answer and "DA_CREDENTIALS_KEY" in answer


def test_credentials_without_a_configured_key_are_refused(
    stack: Stack, model: ScriptedModel, mcp: ThreadedServer
) -> None:
    without_key = stack.settings.model_copy(update={"credentials_key": None})
    with (
        stack.other_api(without_key) as url,
        httpx.Client(base_url=url, timeout=120) as http,
        mcp_server.registered_toolgroup(http, mcp) as toolgroup,
    ):
        turns = _turns(http, toolgroup)
        refused = http.post(turns, json=_ask(), headers=_credentials(mcp))
        listed = http.get(turns.removesuffix("/turn"))

    assert refused.status_code == 400
    assert "DA_CREDENTIALS_KEY" in refused.json()["detail"]
    assert SECRET_TOKEN not in refused.text
    assert listed.json()["turns"] == []
    assert model.requests == []


def test_a_resume_brings_credentials_the_create_did_not(
    stack: Stack, http: httpx.Client, model: ScriptedModel, mcp: ThreadedServer, toolgroup: str
) -> None:
    turns = _pause_then_open_the_vault(http, model, toolgroup)
    paused = http.post(turns, json=_ask(stream=False)).json()
    assert paused["status"] == "awaiting_input"
    assert _kept(stack, paused["turn_id"]) is None

    call_id = paused["output_message"]["tool_calls"][0]["call_id"]
    results = [{"call_id": call_id, "tool_name": "get_boiling_point", "content": "-100"}]
    resume = f"{turns}/{paused['turn_id']}/resume"
    turn = http.post(resume, json={"tool_responses": results}, headers=_credentials(mcp)).json()

    assert turn["status"] == "completed"
    assert _vault_answers(turn) == ["the vault is open"]
    assert _kept(stack, paused["turn_id"]) is None
