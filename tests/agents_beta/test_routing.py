"""A client that omits `OpenAI-Beta: agents=v1` (raw HTTP from any language) still reaches the Agents API
where the path or the body shows the request is one of its, while llama-stack clients on the same paths
(`llama-stack-client` 0.2.12, which sends `agent_config`) keep their own answers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
from llama_stack_client import LlamaStackClient
from openai import OpenAI

from tests.support.scripted_model import ScriptedModel, text
from tests.support.stack import SCRIPTED_MODEL

TOOL: Any = {"type": "function", "name": "lookup", "description": "Look it up.", "parameters": {"type": "object"}}


def test_an_agents_create_body_without_the_header_makes_an_openai_agent(client: OpenAI, http: httpx.Client) -> None:
    created = http.post("/v1/agents", json={"model": SCRIPTED_MODEL, "name": "headerless", "tools": [TOOL]})
    assert created.status_code == 200, created.text
    agent = created.json()
    assert agent["id"].startswith("agent_") and agent["object"] == "agent" and agent["name"] == "headerless"
    assert client.beta.agents.retrieve(agent["id"]).tools[0].name == "lookup"

    assert http.get(f"/v1/agents/{agent['id']}").json()["name"] == "headerless"
    updated = http.post(f"/v1/agents/{agent['id']}", json={"name": "renamed"})
    assert updated.status_code == 200, updated.text
    assert client.beta.agents.retrieve(agent["id"]).name == "renamed"
    deleted = http.delete(f"/v1/agents/{agent['id']}")
    assert deleted.json() == {"id": agent["id"], "object": "agent.deleted", "deleted": True}


def test_a_body_sent_in_chunks_is_read_whole_and_reaches_the_route(http: httpx.Client) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"model": "' + SCRIPTED_MODEL.encode()
        yield b'", "instructions": "Be brief.", "name": "chunked"}'

    created = http.post("/v1/agents", content=chunks(), headers={"Content-Type": "application/json"})
    assert created.status_code == 200, created.text
    assert created.json()["name"] == "chunked" and created.json()["instructions"] == "Be brief."


def test_session_and_automation_paths_need_no_header(http: httpx.Client, model: ScriptedModel) -> None:
    model.script(text("Routed."))
    body = {
        "environment": {"type": "none"},
        "agent": {"model": SCRIPTED_MODEL},
        "input": "Hi",
        "metadata": {"route": "path"},
    }
    created = http.post("/v1/agents/sessions", json=body)
    assert created.status_code == 200, created.text
    session_id = created.json()["id"]
    assert session_id.startswith("sess_")
    assert http.get(f"/v1/agents/sessions/{session_id}").json()["metadata"] == {"route": "path"}
    listed = http.get("/v1/agents/sessions", params={"metadata[route]": "path"}).json()
    assert [session["id"] for session in listed["data"]] == [session_id]
    assert http.get("/v1/agents/automations").json()["object"] == "list"
    assert http.get("/v1/agents/automations/auto_missing").json()["error"]["type"] == "invalid_request_error"


def test_llama_stack_client_calls_are_answered_by_the_llama_stack_dialect(
    client: OpenAI, llama: LlamaStackClient, http: httpx.Client
) -> None:
    agent_id = llama.agents.create(agent_config={"model": SCRIPTED_MODEL, "instructions": "Be brief."}).agent_id
    assert http.get(f"/v1/agents/{agent_id}").json()["agent_config"]["instructions"] == "Be brief."
    session_id = llama.agents.session.create(agent_id, session_name="kept").session_id
    assert llama.agents.session.retrieve(session_id, agent_id=agent_id).session_name == "kept"
    assert agent_id not in [agent.id for agent in client.beta.agents.list(limit=100)]
    llama.agents.delete(agent_id)

    # A body with top-level agents.create fields beside `agent_config` is still a llama-stack create.
    both = http.post("/v1/agents", json={"agent_config": {"model": SCRIPTED_MODEL, "instructions": "x"}, "name": "n"})
    assert both.status_code == 200 and "agent_id" in both.json(), both.text
    # Bodies that are neither get the llama-stack route's validation error, as before.
    for bad in ({}, {"unknown": 1}, [1], "not json"):
        answer = http.post("/v1/agents", json=bad) if bad != "not json" else http.post("/v1/agents", content=bad)
        assert answer.status_code == 400 and "detail" in answer.json(), (bad, answer.text)


def test_errors_of_header_less_agents_api_requests_come_in_openai_s_envelope(http: httpx.Client) -> None:
    """Also those FastAPI's validation answers, outside the route's own checks."""
    bad_limit = http.get("/v1/agents/sessions", params={"limit": 0})
    assert bad_limit.status_code == 400 and bad_limit.json()["error"]["param"] == "limit", bad_limit.text
    llama_shaped = http.get("/v1/agents/not-an-agent")  # the llama-stack dialect's own 404, as before
    assert llama_shaped.status_code == 404 and "detail" in llama_shaped.json(), llama_shaped.text


def test_llama_stack_shaped_paths_stay_llama_stack_s_whatever_the_agent_id(http: httpx.Client) -> None:
    """An agent id that happens to be one of this dialect's words (`environments`, `sessions`, `automations`)
    in a llama-stack path gets the llama-stack dialect's answer, not an Agents API one."""
    for word in ("environments", "sessions", "automations"):
        turn_events = http.get(f"/v1/agents/{word}/session/s1/turn/t1/events")
        assert turn_events.status_code == 404 and "detail" in turn_events.json(), turn_events.text
        sessions = http.get(f"/v1/agents/{word}/sessions")
        assert sessions.status_code == 404 and "detail" in sessions.json(), sessions.text
    assert "error" in http.get("/v1/agents/environments/env_1").json()  # this dialect's own path, as before
