"""Tenancy on the Agents API (beta): another tenant's key gets exactly the 404 of an id that never existed on
every route that names an agent, session or turn, and the owner loses nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from openai import OpenAI

from tests.support.processes import EVENT_SECONDS, wait_until
from tests.support.scripted_model import ScriptedModel, text, tool_call
from tests.support.stack import SCRIPTED_MODEL, Stack

OWNER_KEY = "beta-owner-key-0123"
OTHER_KEY = "beta-other-key-4567"
BETA = {"OpenAI-Beta": "agents=v1"}
WEATHER: Any = {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}

AGENTS_BETA_ROUTES = {
    ("post", "/v1/agents/sessions"),
    ("get", "/v1/agents/sessions"),
    ("get", "/v1/agents/sessions/{session_id}"),
    ("post", "/v1/agents/sessions/{session_id}"),
    ("delete", "/v1/agents/sessions/{session_id}"),
    ("post", "/v1/agents/sessions/{session_id}/events"),
    ("get", "/v1/agents/sessions/{session_id}/events"),
    ("get", "/v1/agents/sessions/{session_id}/items"),
    ("get", "/v1/agents/sessions/{session_id}/turns"),
    ("get", "/v1/agents/sessions/{session_id}/turns/{turn_id}"),
    ("get", "/v1/agents/sessions/{session_id}/turns/{turn_id}/items"),
}
"""The Agents API routes in the OpenAPI document (its agents routes share the llama-stack dialect's paths and
are left out of it), each walked below."""


@pytest.fixture(scope="module")
def keyed_api(stack: Stack) -> Iterator[str]:
    with stack.other_api(stack.settings.model_copy(update=dict(api_keys=(OWNER_KEY, OTHER_KEY)))) as url:
        yield url


def _requests(ids: dict[str, str]) -> list[tuple[str, str, dict[str, Any] | None]]:
    agent, session = f"/v1/agents/{ids['agent_id']}", f"/v1/agents/sessions/{ids['session_id']}"
    result = {
        "type": "agent.session.input.tool_result",
        "turn_id": ids["turn_id"],
        "call_id": ids["call_id"],
        "success": True,
        "output": "stolen",
    }
    return [
        ("get", agent, None),
        ("post", agent, {"name": "stolen"}),
        ("post", "/v1/agents/sessions", {"environment": {"type": "none"}, "agent_id": ids["agent_id"], "input": "hi"}),
        ("get", session, None),
        ("post", session, {"metadata": {"stolen": "yes"}}),
        ("post", f"{session}/events", {"events": [result]}),
        ("post", f"{session}/events", {"events": [{"type": "agent.session.input.cancel"}]}),
        ("get", f"{session}/events", None),
        ("get", f"{session}/items", None),
        ("get", f"{session}/turns", None),
        ("get", f"{session}/turns/{ids['turn_id']}", None),
        ("get", f"{session}/turns/{ids['turn_id']}/items", None),
        ("delete", session, None),
        ("delete", agent, None),
    ]


def _with_status(client: OpenAI, session_id: str, status: str) -> Any:
    """The session, if it has `status` (or None)."""
    session = client.beta.agents.sessions.retrieve(session_id)
    return session if session.status == status else None


def test_another_tenant_gets_404_everywhere_and_the_owner_loses_nothing(keyed_api: str, model: ScriptedModel) -> None:
    owner = OpenAI(base_url=f"{keyed_api}/v1", api_key=OWNER_KEY, max_retries=0)
    agent = owner.beta.agents.create(model=SCRIPTED_MODEL, tools=[WEATHER])
    model.script(tool_call("get_weather"), text("Sunny."))
    created = owner.beta.agents.sessions.create(environment={"type": "none"}, agent_id=agent.id, input="Weather?")
    session = wait_until(lambda: _with_status(owner, created.id, "requires_action"), "the call", EVENT_SECONDS)
    (action,) = session.required_actions
    ids = {"agent_id": agent.id, "session_id": session.id, "turn_id": action.turn_id, "call_id": action.call_id}
    unknown = {key: f"{value[:5]}unknown" for key, value in ids.items()}
    with httpx.Client(
        base_url=keyed_api, timeout=30, headers={"Authorization": f"Bearer {OTHER_KEY}", **BETA}
    ) as other:
        for (method, path, body), (_, unknown_path, unknown_body) in zip(
            _requests(ids), _requests(unknown), strict=True
        ):
            refused = other.request(method, path, json=body)
            never = other.request(method, unknown_path, json=unknown_body)
            assert refused.status_code == never.status_code == 404, (method, path, refused.text, never.text)
            assert refused.json()["error"]["message"].split(" ")[0] == never.json()["error"]["message"].split(" ")[0]
        assert other.get("/v1/agents/sessions").json()["data"] == []
        assert other.get("/v1/agents").json() == {
            "object": "list",
            "data": [],
            "first_id": "",
            "last_id": "",
            "has_more": False,
        }

    session = owner.beta.agents.sessions.retrieve(session.id)
    assert session.status == "requires_action" and session.metadata == {}
    owner.beta.agents.sessions.events.create(
        session.id,
        events=[
            {
                "type": "agent.session.input.tool_result",
                "turn_id": ids["turn_id"],
                "call_id": ids["call_id"],
                "success": True,
                "output": "sunny",
            }
        ],
    )
    wait_until(lambda: _with_status(owner, session.id, "idle"), "the session idle", EVENT_SECONDS)
    assert [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"] == ["sunny"]
    assert owner.beta.agents.retrieve(agent.id).name is None


def test_every_agents_beta_route_of_the_openapi_document_is_walked(keyed_api: str) -> None:
    spec = httpx.get(f"{keyed_api}/openapi.json", headers={"Authorization": f"Bearer {OWNER_KEY}"}, timeout=60).json()
    beta = {
        (method, path)
        for path, operations in spec["paths"].items()
        for method in operations
        if path.startswith("/v1/agents/sessions")
    }
    templates = {"agent_id": "{agent_id}", "session_id": "{session_id}", "turn_id": "{turn_id}", "call_id": "c"}
    walked = {(method, path) for method, path, _ in _requests(templates)}
    walked.add(("get", "/v1/agents/sessions"))  # the other tenant's list is empty (the walk above)
    assert beta == AGENTS_BETA_ROUTES and beta <= walked
