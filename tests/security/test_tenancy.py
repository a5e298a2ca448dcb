"""Tenancy: API keys map to tenants, and a tenant cannot see or touch another's resources on any route.

Tenants on one real API: two plain keys, each a tenant of its own, and `alpha` with two keys
(`tenant:key` entries). Every route of the OpenAPI document is walked with another tenant's key.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.server.mcpserver import MCPServer
from temporalio.common import SearchAttributeKey

from api.guards.tenancy import principals
from configuration.loading import load_settings
from configuration.settings import OFFLINE_MODEL_ID, SettingsError
from tests.agents_beta.test_automations_tenancy import AUTOMATION_ROUTES
from tests.agents_beta.test_tenancy import AGENTS_BETA_ROUTES
from tests.inbox.test_decisions import INBOX_DECISION_ROUTES
from tests.inbox.test_inbox_actions import INBOX_ACTION_ROUTES
from tests.inbox.test_inbox_api import INBOX_ROUTES
from tests.knowledge.test_knowledge_tenancy import KNOWLEDGE_ROUTES
from tests.operations.test_retention import OPERATOR_ROUTES
from tests.responses.test_compaction_api import COMPACTION_ROUTES
from tests.responses.test_conversations import CONVERSATION_ROUTES
from tests.responses.test_responses_api import RESPONSE_ROUTES
from tests.sandbox.test_containers_api import CONTAINER_ROUTES
from tests.support.processes import EVENT_SECONDS, wait_until
from tests.support.rest import sse_events
from tests.support.scripted_model import ScriptedModel, ThreadedServer, text, tool_call
from tests.support.stack import SCRIPTED_MODEL, Stack, free_port
from tests.webhooks.test_webhooks_delivery import WEBHOOK_ROUTES

TENANT_ID = SearchAttributeKey.for_keyword("TenantId")

ALPHA_KEYS = ("alpha-key-one-0123", "alpha-key-two-4567")
PLAIN_KEY = "plain-key-89ab"
OWNER_KEY = "owner-key-cdef"
WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Current weather",
    "parameters": [{"name": "city", "parameter_type": "str", "description": "City", "required": True}],
}
SHARED_TOOLGROUP = "mcp::shared-name"

TOOLGROUP_ROUTES = {
    ("get", "/v1/agents"),
    ("post", "/v1/agents"),
    ("get", "/v1/tools"),
    ("get", "/v1/toolgroups"),
    ("post", "/v1/toolgroups"),
    ("get", "/v1/toolgroups/{toolgroup_id}"),
    ("delete", "/v1/toolgroups/{toolgroup_id}"),
    ("post", "/v1/tool-runtime/invoke"),
}
"""Walked by the toolgroup test (agents: listing and creation with another tenant's toolgroup)."""
TENANT_FREE_ROUTES = {("get", "/v1/health"), ("get", "/v1/shields")}
"""Routes that read no tenant's resources: liveness, and the configured shields."""


def _whoami_server(answer: str) -> ThreadedServer:
    """An MCP server whose one tool says whose server it is."""
    server = MCPServer(f"tenant-{answer}")

    @server.tool()
    def whoami() -> str:
        """Name the owner of this server."""
        return answer

    return ThreadedServer(server.streamable_http_app(), free_port()).start()


@pytest.fixture(scope="module")
def keyed_api(stack: Stack) -> Iterator[str]:
    entries = (f"alpha:{ALPHA_KEYS[0]}", f"alpha:{ALPHA_KEYS[1]}", PLAIN_KEY, OWNER_KEY)
    with stack.other_api(stack.settings.model_copy(update=dict(api_keys=entries))) as url:
        yield url


def _eventually(stack: Stack, read: Callable[[], Coroutine[Any, Any, list[object]]]) -> list[object]:
    """Temporal's visibility store catches up with a start within moments, longer on a loaded machine."""
    return wait_until(lambda: stack.background.run(read()), "a workflow in Temporal's visibility", EVENT_SECONDS)


def _client(url: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=url, timeout=60, headers={"Authorization": f"Bearer {key}"})


@pytest.fixture
def alpha(keyed_api: str) -> Iterator[httpx.Client]:
    with _client(keyed_api, ALPHA_KEYS[0]) as client:
        yield client


@pytest.fixture
def alpha_again(keyed_api: str) -> Iterator[httpx.Client]:
    with _client(keyed_api, ALPHA_KEYS[1]) as client:
        yield client


@pytest.fixture
def owner(keyed_api: str) -> Iterator[httpx.Client]:
    """A plain key: a tenant of its own."""
    with _client(keyed_api, OWNER_KEY) as client:
        yield client


@pytest.fixture
def plain(keyed_api: str) -> Iterator[httpx.Client]:
    with _client(keyed_api, PLAIN_KEY) as client:
        yield client


def _paused_turn(http: httpx.Client) -> dict[str, str]:
    """An agent, a session and a turn paused on a client tool call: every kind of resource, by id."""
    config = {"model": OFFLINE_MODEL_ID, "instructions": "Be brief.", "client_tools": [WEATHER_TOOL]}
    agent_id = http.post("/v1/agents", json={"agent_config": config}).raise_for_status().json()["agent_id"]
    session = http.post(f"/v1/agents/{agent_id}/session", json={"session_name": "mine"}).raise_for_status()
    session_id = session.json()["session_id"]
    ask = {"messages": [{"role": "user", "content": 'call tool get_weather {"city": "Paris"}'}], "stream": True}
    response = http.post(f"/v1/agents/{agent_id}/session/{session_id}/turn", json=ask).raise_for_status()
    turn = sse_events(response)[-1][1]["event"]["payload"]["turn"]
    assert turn["status"] == "awaiting_input", turn
    return {
        "agent_id": agent_id,
        "session_id": session_id,
        "turn_id": turn["turn_id"],
        "step_id": turn["steps"][0]["step_id"],
        "call_id": turn["output_message"]["tool_calls"][0]["call_id"],
    }


def _foreign_requests(ids: dict[str, str]) -> list[tuple[str, str, dict[str, Any] | None]]:
    """Every route that names an agent, session, turn or step, aimed at the given ones."""
    agent = f"/v1/agents/{ids['agent_id']}"
    session = f"{agent}/session/{ids['session_id']}"
    turn = f"{session}/turn/{ids['turn_id']}"
    resume = {"tool_responses": [{"call_id": ids["call_id"], "tool_name": "get_weather", "content": "stolen"}]}
    return [
        ("get", agent, None),
        ("get", f"{agent}/sessions", None),
        ("post", f"{agent}/session", {"session_name": "intruder"}),
        ("get", session, None),
        ("post", f"{session}/turn", {"messages": [{"role": "user", "content": "hi"}], "stream": False}),
        ("get", turn, None),
        ("get", f"{turn}/step/{ids['step_id']}", None),
        ("get", f"{turn}/events", None),
        ("post", f"{turn}/resume", resume),
        ("post", f"{turn}/cancel", None),
        ("delete", session, None),
        ("delete", agent, None),
    ]


def test_another_tenant_gets_404_on_every_route_and_the_owner_loses_nothing(
    owner: httpx.Client, plain: httpx.Client
) -> None:
    ids = _paused_turn(owner)
    unknown = {key: str(uuid.uuid4()) for key in ids}
    for (method, path, body), (_, unknown_path, _) in zip(
        _foreign_requests(ids), _foreign_requests(unknown), strict=True
    ):
        refused = plain.request(method, path, json=body)
        assert refused.status_code == 404, (method, path, refused.status_code, refused.text)
        # Exactly what an id that never existed gets, so the answer confirms nothing.
        never = plain.request(method, unknown_path, json=body)
        assert never.status_code == 404
        assert refused.json()["detail"].split(" ")[0] == never.json()["detail"].split(" ")[0]
    assert ids["agent_id"] not in {a["agent_id"] for a in plain.get("/v1/agents").json()["data"]}

    # The owner still has all of it, untouched: the turn still waits for its tool result, and no
    # intruder's session was made.
    agent = f"/v1/agents/{ids['agent_id']}"
    assert ids["agent_id"] in {a["agent_id"] for a in owner.get("/v1/agents").json()["data"]}
    sessions = owner.get(f"{agent}/sessions").json()["data"]
    assert [s["session_id"] for s in sessions] == [ids["session_id"]]
    turn = f"{agent}/session/{ids['session_id']}/turn/{ids['turn_id']}"
    assert owner.get(turn).json()["status"] == "awaiting_input"
    resume = {"tool_responses": [{"call_id": ids["call_id"], "tool_name": "get_weather", "content": "sunny"}]}
    resumed = owner.post(f"{turn}/resume", json=resume)
    assert resumed.status_code == 200, resumed.text
    assert resumed.json()["output_message"]["content"] == "Tool get_weather returned: sunny."
    assert owner.delete(agent).status_code == 200


def test_keys_of_one_named_tenant_share_its_resources(
    alpha: httpx.Client, alpha_again: httpx.Client, plain: httpx.Client
) -> None:
    ids = _paused_turn(alpha)
    agent = f"/v1/agents/{ids['agent_id']}"
    turn = f"{agent}/session/{ids['session_id']}/turn/{ids['turn_id']}"
    assert alpha_again.get(turn).json()["status"] == "awaiting_input"
    assert plain.get(turn).status_code == 404
    assert alpha_again.delete(agent).status_code == 200
    assert alpha.get(agent).status_code == 404


def test_every_route_of_the_openapi_document_is_walked(owner: httpx.Client) -> None:
    """The walk above and the toolgroup test below cover every route; a new route must join them."""
    spec = owner.get("/openapi.json").json()
    routes = {(method, path) for path, operations in spec["paths"].items() for method in operations}
    templates = {"agent_id": "{agent_id}", "session_id": "{session_id}", "turn_id": "{turn_id}", "step_id": "{step_id}"}
    walked = {(method, path) for method, path, _ in _foreign_requests({**templates, "call_id": "c"})}
    covered = TOOLGROUP_ROUTES | TENANT_FREE_ROUTES | CONVERSATION_ROUTES | RESPONSE_ROUTES | WEBHOOK_ROUTES
    covered |= COMPACTION_ROUTES | OPERATOR_ROUTES | AGENTS_BETA_ROUTES | AUTOMATION_ROUTES | CONTAINER_ROUTES
    covered |= INBOX_ROUTES | INBOX_ACTION_ROUTES | INBOX_DECISION_ROUTES
    assert routes - walked - covered - KNOWLEDGE_ROUTES == set()


def test_toolgroups_belong_to_their_tenant_and_turns_call_their_own(
    stack: Stack, model: ScriptedModel, owner: httpx.Client, plain: httpx.Client
) -> None:
    alpha_server, plain_server = _whoami_server("owner"), _whoami_server("plain")
    try:
        register = {"toolgroup_id": SHARED_TOOLGROUP, "provider_id": "model-context-protocol"}
        first = owner.post(
            "/v1/toolgroups", json={**register, "mcp_endpoint": {"uri": f"{alpha_server.allowed_url}/mcp"}}
        )
        assert first.status_code == 200, first.text

        # Another tenant sees nothing of it, and cannot reach or remove it.
        assert SHARED_TOOLGROUP not in {g["identifier"] for g in plain.get("/v1/toolgroups").json()["data"]}
        assert plain.get(f"/v1/toolgroups/{SHARED_TOOLGROUP}").status_code == 404
        assert plain.get("/v1/tools", params={"toolgroup_id": SHARED_TOOLGROUP}).status_code == 404
        assert plain.delete(f"/v1/toolgroups/{SHARED_TOOLGROUP}").status_code == 404
        assert plain.post("/v1/tool-runtime/invoke", json={"tool_name": "whoami", "kwargs": {}}).status_code == 404
        agent = {"model": OFFLINE_MODEL_ID, "instructions": "x", "toolgroups": [SHARED_TOOLGROUP]}
        assert plain.post("/v1/agents", json={"agent_config": agent}).status_code == 400

        # Registering the same id makes the other tenant's own group; it cannot re-point the owner's.
        second = plain.post(
            "/v1/toolgroups", json={**register, "mcp_endpoint": {"uri": f"{plain_server.allowed_url}/mcp"}}
        )
        assert second.status_code == 200, second.text
        for client, name in ((owner, "owner"), (plain, "plain")):
            invoked = client.post("/v1/tool-runtime/invoke", json={"tool_name": "whoami", "kwargs": {}})
            assert invoked.status_code == 200 and invoked.json()["content"] == name, invoked.text
            group = client.get(f"/v1/toolgroups/{SHARED_TOOLGROUP}").json()
            assert group["mcp_endpoint"]["uri"].startswith(
                alpha_server.allowed_url if name == "owner" else plain_server.allowed_url
            )

        # A turn's tools are resolved by the worker within the turn's tenant.
        for client, name in ((owner, "owner"), (plain, "plain")):
            model.script(tool_call("whoami"), text("done"))
            config = {"model": SCRIPTED_MODEL, "instructions": "x", "toolgroups": [SHARED_TOOLGROUP]}
            agent_id = client.post("/v1/agents", json={"agent_config": config}).raise_for_status().json()["agent_id"]
            session = client.post(f"/v1/agents/{agent_id}/session", json={"session_name": "t"}).raise_for_status()
            turn = client.post(
                f"/v1/agents/{agent_id}/session/{session.json()['session_id']}/turn",
                json={"messages": [{"role": "user", "content": "who?"}], "stream": False},
            )
            assert turn.status_code == 200, turn.text
            execution = next(s for s in turn.json()["steps"] if s["step_type"] == "tool_execution")
            assert execution["tool_responses"][0]["content"] == name
            client.delete(f"/v1/agents/{agent_id}")

        # The built-in toolgroup is shared and read-only.
        assert {"builtin::calculator"} <= {g["identifier"] for g in plain.get("/v1/toolgroups").json()["data"]}
        overwrite = {
            **register,
            "toolgroup_id": "builtin::calculator",
            "mcp_endpoint": {"uri": plain_server.allowed_url},
        }
        assert plain.post("/v1/toolgroups", json=overwrite).status_code == 409
        assert plain.delete("/v1/toolgroups/builtin::calculator").status_code == 409
        calculated = plain.post(
            "/v1/tool-runtime/invoke", json={"tool_name": "calculate", "kwargs": {"expression": "2+3"}}
        )
        assert calculated.json()["content"] == "5"

        # Unregistering one tenant's group leaves the other's.
        assert owner.delete(f"/v1/toolgroups/{SHARED_TOOLGROUP}").status_code == 200
        assert owner.get(f"/v1/toolgroups/{SHARED_TOOLGROUP}").status_code == 404
        assert plain.get(f"/v1/toolgroups/{SHARED_TOOLGROUP}").status_code == 200
    finally:
        plain.delete(f"/v1/toolgroups/{SHARED_TOOLGROUP}")
        owner.delete(f"/v1/toolgroups/{SHARED_TOOLGROUP}")
        alpha_server.stop()
        plain_server.stop()


async def _tenants_listed(stack: Stack, query: str) -> list[object]:
    """The TenantId search attribute of each workflow the visibility query finds."""
    return [execution.typed_search_attributes.get(TENANT_ID) async for execution in stack.client.list_workflows(query)]


def test_the_tenant_is_a_search_attribute_of_each_turn(stack: Stack, alpha: httpx.Client) -> None:
    ids = _paused_turn(alpha)

    query = f'WorkflowId="turn-{ids["turn_id"]}" AND TenantId="alpha"'
    assert _eventually(stack, lambda: _tenants_listed(stack, query)) == ["alpha"]
    alpha.delete(f"/v1/agents/{ids['agent_id']}")


def test_without_api_keys_everyone_is_the_default_tenant(stack: Stack, http: httpx.Client) -> None:
    ids = _paused_turn(http)

    query = f'WorkflowId="turn-{ids["turn_id"]}"'
    assert _eventually(stack, lambda: _tenants_listed(stack, query)) == ["default"]
    http.delete(f"/v1/agents/{ids['agent_id']}")


def test_key_entries_name_tenants_and_bad_ones_are_refused_by_name(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.write_text("# ops team\nacme:file-key-1\n\nfile-key-2\n")
    settings = load_settings({"DA_API_KEYS": "acme:env-key-1, env-key-2", "DA_API_KEYS_FILE": str(keys)})
    accepted = principals(settings.key_entries())
    assert {principal.tenant for principal in accepted.values()} >= {"acme"}
    assert len({principal.tenant for principal in accepted.values()}) == 3  # acme, and each plain key's own
    assert all("key-2" not in principal.tenant for principal in accepted.values())  # no key in a tenant name

    for bad in ("bad tenant:key", ":key", "acme:"):
        with pytest.raises(SettingsError, match="'key' or 'tenant:key'"):
            principals((bad,))
    with pytest.raises(SettingsError, match="two tenants"):
        principals(("acme:same", "globex:same"))
    with pytest.raises(SettingsError, match="DA_API_KEYS_FILE"):
        load_settings({"DA_API_KEYS_FILE": str(tmp_path / "missing")})
