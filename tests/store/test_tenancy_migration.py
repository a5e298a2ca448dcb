"""Revision 0004 (tenancy) on a store with rows: everything made before belongs to tenant `default`."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Connection, text

from store.upgrade import upgrade_store
from tests.store.test_migrations import insert_legacy_rows, make_legacy_store, on
from tests.support.databases import store_url


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with store_url(request.param, tmp_path) as made:
        yield made


def _legacy_toolgroup(connection: Connection) -> None:
    connection.execute(
        text(
            "INSERT INTO toolgroups (toolgroup_id, provider_id, mcp_uri, created_at) VALUES "
            "('mcp::kept', 'model-context-protocol', 'http://localhost:9/mcp', '2026-01-01 00:00:00+00:00')"
        )
    )


def test_rows_made_before_tenancy_belong_to_the_default_tenant(url: str) -> None:
    asyncio.run(on(url, make_legacy_store))
    asyncio.run(on(url, insert_legacy_rows))
    asyncio.run(on(url, _legacy_toolgroup))
    asyncio.run(upgrade_store(url, "0003"))

    asyncio.run(upgrade_store(url, "0004"))

    def read(connection: Connection) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
        agents = connection.execute(text("SELECT agent_id, tenant_id FROM agents")).all()
        groups = connection.execute(text("SELECT tenant_id, toolgroup_id, mcp_uri FROM toolgroups")).all()
        return [tuple(row) for row in agents], [tuple(row) for row in groups]

    agents, groups = asyncio.run(on(url, read))
    assert agents == [("a1", "default")]
    assert groups == [("default", "mcp::kept", "http://localhost:9/mcp")]

    # The same toolgroup id may now exist in another tenant.
    def register_elsewhere(connection: Connection) -> None:
        connection.execute(
            text(
                "INSERT INTO toolgroups (tenant_id, toolgroup_id, provider_id, created_at) VALUES "
                "('other', 'mcp::kept', 'model-context-protocol', '2026-01-02 00:00:00+00:00')"
            )
        )

    asyncio.run(on(url, register_elsewhere))
    count = asyncio.run(on(url, lambda c: c.scalar(text("SELECT count(*) FROM toolgroups"))))
    assert count == 2
