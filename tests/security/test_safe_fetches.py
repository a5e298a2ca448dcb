"""Fetches a caller can steer, through the running stack: documents (the worker), MCP servers (the API
and the worker) and the calculator. Each refusal is checked on a listener that must see no request.

The test stack allows `localhost` (DA_OUTBOUND_ALLOW); the same listeners addressed as 127.0.0.1,
or in a numeric spelling of it, are loopback addresses the policy refuses.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from tests.support import mcp_server
from tests.support.listener import Listener, Reply
from tests.support.rest import create_agent, create_session, final_turn, sse_events
from tests.support.scripted_model import ScriptedModel, ThreadedServer, text, tool_call
from tests.support.stack import TOOL_CALL_DEADLINE, Stack, free_port

INVOKE = "/v1/tool-runtime/invoke"


@pytest.fixture
def listener() -> Iterator[Listener]:
    running = Listener()
    yield running
    running.close()


def _turns(http: httpx.Client, **config: Any) -> str:
    agent_id = create_agent(http, **config)
    return f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"


def _document_turn(http: httpx.Client, url: str) -> dict[str, Any]:
    """The final event of a streamed turn with one URL document."""
    body = {
        "messages": [{"role": "user", "content": "read it"}],
        "documents": [{"content": {"type": "url", "uri": url}, "mime_type": "text/plain"}],
        "stream": True,
    }
    return sse_events(http.post(_turns(http), json=body))[-1][1]


@contextmanager
def _registered(http: httpx.Client, uri: str) -> Iterator[str]:
    toolgroup_id = f"mcp::safe-{uuid.uuid4().hex[:8]}"
    body = {"toolgroup_id": toolgroup_id, "provider_id": "model-context-protocol", "mcp_endpoint": {"uri": uri}}
    response = http.post("/v1/toolgroups", json=body)
    assert response.status_code == 200, response.text
    try:
        yield toolgroup_id
    finally:
        http.delete(f"/v1/toolgroups/{toolgroup_id}")


@contextmanager
def _other_api(stack: Stack, **changes: Any) -> Iterator[httpx.Client]:
    """A second API on the same Temporal and store, with some settings changed."""
    with (
        stack.other_api(stack.settings.model_copy(update=changes)) as url,
        httpx.Client(base_url=url, timeout=120) as client,
    ):
        yield client


# Documents (fetched by the worker)


def test_a_document_on_a_loopback_address_fails_the_turn_and_is_never_requested(
    http: httpx.Client, model: ScriptedModel, listener: Listener
) -> None:
    listener.routes["/doc.txt"] = Reply(body=b"internal secrets")
    for url in (f"{listener.url}/doc.txt", f"http://2130706433:{listener.port}/doc.txt"):
        error = _document_turn(http, url)["error"]["message"]
        assert "could not be used" in error and "loopback address" in error and "DA_OUTBOUND_ALLOW" in error, error
    assert listener.hits == []
    assert model.requests == []


def test_a_redirect_to_a_refused_address_is_not_followed(
    http: httpx.Client, model: ScriptedModel, listener: Listener
) -> None:
    inner = Listener()
    try:
        inner.routes["/api/namespaces"] = Reply(body=b"{}")
        listener.routes["/moved"] = Reply(status=302, location=f"{inner.url}/api/namespaces")
        error = _document_turn(http, f"{listener.allowed_url}/moved")["error"]["message"]
        assert "loopback address" in error, error
        assert listener.hits == ["/moved"]
        assert inner.hits == []
    finally:
        inner.close()


def test_a_document_over_the_limit_is_abandoned_while_it_streams(
    http: httpx.Client, model: ScriptedModel, listener: Listener
) -> None:
    listener.routes["/huge.txt"] = Reply(stream_bytes=100 * 1024 * 1024)
    error = _document_turn(http, f"{listener.allowed_url}/huge.txt")["error"]["message"]
    assert "larger than 1,048,576 bytes" in error, error
    assert listener.sent_bytes < 32 * 1024 * 1024, f"{listener.sent_bytes:,} bytes were read"


# MCP servers (reached by the API and by the worker)


def test_an_mcp_endpoint_on_a_loopback_address_is_refused_at_registration(
    http: httpx.Client, listener: Listener
) -> None:
    for uri in (f"{listener.url}/mcp", f"http://[::ffff:127.0.0.1]:{listener.port}/mcp"):
        body = {"toolgroup_id": "mcp::inner", "provider_id": "model-context-protocol", "mcp_endpoint": {"uri": uri}}
        response = http.post("/v1/toolgroups", json=body)
        assert response.status_code == 400, response.text
        assert "loopback address" in response.json()["detail"] and "DA_OUTBOUND_ALLOW" in response.json()["detail"]
    assert http.get("/v1/toolgroups/mcp::inner").status_code == 404
    assert listener.hits == []


def test_a_toolgroup_on_a_refused_address_is_never_contacted_by_the_api_or_the_worker(
    stack: Stack, http: httpx.Client, model: ScriptedModel, listener: Listener
) -> None:
    """Registered where it was allowed (another API allowing 127.0.0.1), used where it is not."""
    with (
        _other_api(stack, outbound_allow=("127.0.0.1",)) as permissive,
        _registered(permissive, f"{listener.url}/mcp") as toolgroup,
    ):
        listing = http.get("/v1/tools")
        assert listing.status_code == 200
        assert "loopback address" in listing.json()["unavailable"][toolgroup]
        assert "calculate" in [tool["identifier"] for tool in listing.json()["data"]]

        one = http.get("/v1/tools", params={"toolgroup_id": toolgroup})
        assert one.status_code == 502 and "loopback address" in one.json()["detail"]

        model.script(text("unused"))
        body = {"messages": [{"role": "user", "content": "hi"}], "stream": True}
        events = sse_events(http.post(_turns(http, toolgroups=[toolgroup]), json=body))
        assert "loopback address" in events[-1][1]["error"]["message"]
    assert listener.hits == []
    assert model.requests == []


@contextmanager
def _mute_server() -> Iterator[int]:
    """A port whose connections are accepted by the kernel and never answered."""
    with socket.socket() as mute:
        mute.bind(("127.0.0.1", 0))
        mute.listen(16)
        yield mute.getsockname()[1]


def test_a_dead_and_a_mute_mcp_server_cost_only_their_own_listing_entries(
    stack: Stack, http: httpx.Client, mcp: ThreadedServer
) -> None:
    with (
        _mute_server() as mute_port,
        _registered(http, f"http://localhost:{mute_port}/mcp") as mute,
        _registered(http, f"http://localhost:{free_port()}/mcp") as dead,
        mcp_server.registered_toolgroup(http, mcp) as alive,
        _other_api(stack, tools_listing_deadline=5.0) as api,
    ):
        started = time.monotonic()
        listing = api.get("/v1/tools")
        elapsed = time.monotonic() - started

        assert listing.status_code == 200, listing.text
        assert elapsed < 15, f"the listing took {elapsed:.1f} s"
        by_group = {tool["toolgroup_id"] for tool in listing.json()["data"]}
        assert {alive, "builtin::calculator"} <= by_group, listing.json()["unavailable"]
        unavailable = listing.json()["unavailable"]
        assert "did not list its tools within 5 s" in unavailable[mute]
        assert unavailable[dead].endswith("could not list its tools: it could not be reached")  # no exception text

        for group, reason in ((dead, "it could not be reached"), (mute, "within 5 s")):
            one = api.get("/v1/tools", params={"toolgroup_id": group})
            assert one.status_code == 502 and reason in one.json()["detail"], one.text
        invoked = api.post(INVOKE, json={"tool_name": "add_numbers", "kwargs": {"a": 1, "b": 2}})
        assert invoked.status_code == 200 and invoked.json()["content"] == "3", invoked.text


def test_an_unreachable_mcp_server_is_a_clear_502(http: httpx.Client) -> None:
    with _registered(http, f"http://localhost:{free_port()}/mcp") as dead:
        response = http.get("/v1/tools", params={"toolgroup_id": dead})
    assert response.status_code == 502
    assert response.json()["detail"].startswith(f"Toolgroup {dead}: The MCP server at http://localhost:")


def test_an_mcp_reply_over_the_limit_fails_the_call(
    http: httpx.Client, model: ScriptedModel, mcp: ThreadedServer
) -> None:
    with mcp_server.registered_toolgroup(http, mcp) as toolgroup:
        invoked = http.post(INVOKE, json={"tool_name": "big_output", "kwargs": {"characters": 6_000_000}})
        assert invoked.status_code == 502, invoked.text[:200]
        assert "larger than 8,388,608 bytes" in invoked.json()["detail"]

        model.script(tool_call("big_output", {"characters": 6_000_000}), text("too big"))
        body = {"messages": [{"role": "user", "content": "go"}], "stream": True}
        turn = final_turn(http.post(_turns(http, toolgroups=[toolgroup]), json=body))
    assert turn["status"] == "completed"
    content = turn["steps"][1]["tool_responses"][0]["content"]
    assert "larger than 8,388,608 bytes" in content and len(content) < 1000


def test_a_tool_that_never_answers_fails_at_its_deadline(
    http: httpx.Client, model: ScriptedModel, mcp: ThreadedServer
) -> None:
    with mcp_server.registered_toolgroup(http, mcp) as toolgroup:
        model.script(tool_call("wait_then_echo", {"seconds": 600, "text": "late"}), text("gave up"))
        body = {"messages": [{"role": "user", "content": "go"}], "stream": True}
        started = time.monotonic()
        turn = final_turn(http.post(_turns(http, toolgroups=[toolgroup]), json=body))
        elapsed = time.monotonic() - started
    assert turn["status"] == "completed"
    content = turn["steps"][1]["tool_responses"][0]["content"]
    assert f"did not run wait_then_echo within {TOOL_CALL_DEADLINE} s" in content, content
    assert elapsed < TOOL_CALL_DEADLINE + 15, f"the turn took {elapsed:.0f} s"


def test_mcp_credentials_travel_as_headers_and_are_never_stored_or_shown(
    stack: Stack, http: httpx.Client, mcp: ThreadedServer
) -> None:
    uri = f"{mcp.allowed_url}/mcp"
    provider_data = json.dumps({"mcp_headers": {uri: {"Authorization": "Bearer per-request-token"}}})
    with mcp_server.registered_toolgroup(http, mcp) as toolgroup:
        mcp_server.AUTHORIZATIONS.clear()
        invoked = http.post(
            INVOKE,
            json={"tool_name": "add_numbers", "kwargs": {"a": 1, "b": 1}},
            headers={"X-LlamaStack-Provider-Data": provider_data},
        )
        assert invoked.json()["content"] == "2"
        assert set(mcp_server.AUTHORIZATIONS) == {"Bearer per-request-token"}

        mcp_server.AUTHORIZATIONS.clear()
        with _other_api(stack, mcp_headers={uri: {"Authorization": "Bearer operator-token"}}) as api:
            assert api.get("/v1/tools", params={"toolgroup_id": toolgroup}).status_code == 200
        assert set(mcp_server.AUTHORIZATIONS) == {"Bearer operator-token"}

        shown = (
            http.get("/v1/toolgroups").text + http.get("/v1/tools").text + http.get(f"/v1/toolgroups/{toolgroup}").text
        )
        assert "token" not in shown
    assert "operator-token" not in repr(
        stack.settings.model_copy(update={"mcp_headers": {uri: {"a": "operator-token"}}})
    )
    bad = http.get("/v1/tools", headers={"X-LlamaStack-Provider-Data": "not json"})
    assert bad.status_code == 400 and "X-LlamaStack-Provider-Data" in bad.json()["detail"]


# The calculator


def _served_meanwhile(http: httpx.Client, request: Any) -> tuple[httpx.Response, float]:
    """Run `request` while health checks go on; returns its response and the slowest health check."""
    slowest = [0.0]
    done = threading.Event()

    def check() -> None:
        with httpx.Client(base_url=str(http.base_url), timeout=30) as other:
            while not done.is_set():
                started = time.monotonic()
                other.get("/v1/health")
                slowest[0] = max(slowest[0], time.monotonic() - started)
                time.sleep(0.05)

    checker = threading.Thread(target=check, daemon=True)
    checker.start()
    try:
        response = request()
    finally:
        done.set()
        checker.join(timeout=30)
    return response, slowest[0]


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        ("((9**999)**999)**999", "more than 1000 digits"),
        ("(((9**999)**2)**2)**2", "more than 1000 digits"),  # once a ValueError: too many digits to print
        ("10.0**400", "too large for a floating-point number"),  # once an OverflowError
        ("(-8)**0.5", "not a real number"),
    ],
)
def test_the_calculator_answers_bounded_expressions_quickly_with_a_clear_error(
    http: httpx.Client, expression: str, error: str
) -> None:
    def invoke() -> httpx.Response:
        return http.post(INVOKE, json={"tool_name": "calculate", "kwargs": {"expression": expression}}, timeout=20)

    started = time.monotonic()
    response, slowest_health = _served_meanwhile(http, invoke)
    assert time.monotonic() - started < 5
    assert slowest_health < 2
    assert response.status_code == 200, response.text
    assert response.json()["error_code"] == 1 and error in response.json()["error_message"]


def test_a_calculator_bomb_in_a_turn_is_a_failed_tool_step(http: httpx.Client, model: ScriptedModel) -> None:
    model.script(tool_call("calculate", {"expression": "((9**999)**999)**999"}), text("too big"))
    turns = _turns(http, toolgroups=["builtin::calculator"], client_tools=[])

    started = time.monotonic()
    turn = http.post(turns, json={"messages": [{"role": "user", "content": "go"}]}, timeout=60).json()

    assert time.monotonic() - started < 30
    assert turn["steps"][1]["tool_responses"][0]["content"] == "Error: the result would have more than 1000 digits"
