"""Error bodies say what the caller can act on, never internals: no driver messages, database
roles, connection strings, internal host names or exception text (those go to the log)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.databases import _admin, postgres_database
from tests.support.stack import Stack, free_port

LEAKS = ("asyncpg", "sqlalchemy", "postgresql", "role", "password", "127.0.0.1", "5432", "errno", "traceback", "/")


def _assert_no_internals(body: str, *secrets: str) -> None:
    lowered = body.lower()
    for leak in (*LEAKS, *secrets):
        if leak == "/":
            assert "/tmp" not in lowered and ".py" not in lowered, body
        else:
            assert leak.lower() not in lowered, (leak, body)


@pytest.fixture
def store_role(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A PostgreSQL database and a role of its own that the API connects as: (store URL, role)."""
    with postgres_database() as url:
        role = f"da_store_{uuid.uuid4().hex[:8]}"
        database = url.rsplit("/", 1)[1]
        _admin(f'CREATE ROLE "{role}" LOGIN')
        _admin(f'ALTER DATABASE "{database}" OWNER TO "{role}"')
        try:
            yield url.replace("://postgres@", f"://{role}@", 1), role
        finally:
            _admin(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            _admin(f'DROP ROLE IF EXISTS "{role}"')


@pytest.mark.parametrize("rate_limit", [0, 6000], ids=["unlimited", "rate-limited"])
def test_with_the_store_down_errors_name_neither_driver_nor_role(
    stack: Stack, store_role: tuple[str, str], rate_limit: int
) -> None:
    """Rate-limited, each request first takes from its key's bucket in the store (store/tenancy/rate_buckets.py)."""
    url, role = store_role
    # Only callers with a key are rate-limited (api/guards/rate_limit.py).
    limits = dict(store_url=url, rate_limit_per_minute=rate_limit, api_keys=("error-bodies-key",))
    with (
        stack.other_api(stack.settings.model_copy(update=limits)) as api,
        httpx.Client(base_url=api, timeout=30, headers={"Authorization": "Bearer error-bodies-key"}) as http,
    ):
        assert http.get("/v1/agents").status_code == 200
        # The store refuses this API from now on: its role may no longer log in, its sessions are ended.
        _admin(f'ALTER ROLE "{role}" NOLOGIN')
        _admin(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{role}'")

        for method, path in (("GET", "/readyz"), ("GET", "/v1/agents"), ("POST", "/v1/agents")):
            body = {"agent_config": {"model": "offline/echo", "instructions": "x"}} if method == "POST" else None
            response = http.request(method, path, json=body)
            assert response.status_code == 503, (path, response.status_code, response.text)
            _assert_no_internals(response.text, role)
            assert response.json()["detail"]
        _admin(f'ALTER ROLE "{role}" LOGIN')
        assert http.get("/v1/agents").status_code == 200  # and it recovers without a restart


def test_an_unreachable_mcp_server_is_a_502_without_exception_text(http: httpx.Client) -> None:
    closed = free_port()
    group = {
        "toolgroup_id": "mcp::unreachable",
        "provider_id": "model-context-protocol",
        "mcp_endpoint": {"uri": f"http://localhost:{closed}/mcp"},
    }
    assert http.post("/v1/toolgroups", json=group).status_code == 200
    try:
        one = http.get("/v1/tools", params={"toolgroup_id": "mcp::unreachable"})
        assert one.status_code == 502, one.text
        listing = http.get("/v1/tools")
        assert listing.status_code == 200, listing.text
        invoked = http.post("/v1/tool-runtime/invoke", json={"tool_name": "no_such_tool", "kwargs": {}})
        assert invoked.status_code == 502, invoked.text
        for reason in (
            one.json()["detail"],
            listing.json()["unavailable"]["mcp::unreachable"],
            invoked.json()["detail"],
        ):
            assert "mcp::unreachable" in reason or "could not be reached" in reason, reason
            for leak in ("errno", "connecterror", "exception", "traceback", "all connection attempts", "refused"):
                assert leak not in reason.lower(), (leak, reason)
    finally:
        http.delete("/v1/toolgroups/mcp::unreachable")
