"""Containers leave with their workspaces: once idle past their `expires_after` (the retention sweep, with no
TTL configured) and with their tenant's erasure; another tenant's stay."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import openai
import pytest

from api.guards.auth import OPERATOR_PREFIX
from code_sandbox.workspaces import workspace_path
from tests.operations.test_retention import _store_sql, retention  # noqa: F401 (a fixture)
from tests.support.processes import EVENT_SECONDS
from tests.support.stack import Stack

OPERATOR_KEY = "operator-key-0123456789"
KEYS = {"containers-erased": "key-cerased-0123", "containers-kept": "key-ckept-4567"}


def test_a_container_idle_past_its_expiry_goes_with_its_workspace(stack: Stack, retention: Any) -> None:  # noqa: F811
    client = openai.OpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0)
    idle = client.containers.create(name="idle", expires_after={"anchor": "last_active_at", "minutes": 5})
    kept = client.containers.create(name="kept", expires_after={"anchor": "last_active_at", "minutes": 5})
    client.containers.files.create(idle.id, file=("a.txt", b"a"))
    past = (datetime.now(UTC) - timedelta(minutes=6)).strftime("%Y-%m-%d %H:%M:%S.%f")  # as SQLAlchemy writes it
    _store_sql(stack, "UPDATE containers SET expires_at = ? WHERE container_id = ?", past, idle.id)
    with pytest.raises(openai.NotFoundError):  # expired is gone for the API at once
        client.containers.retrieve(idle.id)
    workspace = workspace_path(stack.settings.data_dir, idle.id)
    assert workspace.exists()

    retention({}, period=1)
    deadline = time.monotonic() + EVENT_SECONDS
    while workspace.parent.exists():
        assert time.monotonic() < deadline, "the expired container was not swept"
        time.sleep(0.5)
    assert workspace_path(stack.settings.data_dir, kept.id).exists()
    assert client.containers.retrieve(kept.id).id == kept.id
    metrics = httpx.get(f"{stack.base_url}/metrics", timeout=30).text
    assert 'durable_agents_retention_pruned_rows_total{kind="containers",reason="expires_after"}' in metrics
    client.containers.delete(kept.id)


@pytest.fixture
def url(stack: Stack) -> Iterator[str]:
    keys = tuple(f"{tenant}:{key}" for tenant, key in KEYS.items())
    settings = stack.settings.model_copy(update={"api_keys": keys, "operator_key": OPERATOR_KEY})
    with stack.other_api(settings) as running:
        yield running


def test_a_tenants_erasure_takes_its_containers_and_workspaces(stack: Stack, url: str) -> None:
    erased = openai.OpenAI(base_url=f"{url}/v1", api_key=KEYS["containers-erased"], max_retries=0)
    kept = openai.OpenAI(base_url=f"{url}/v1", api_key=KEYS["containers-kept"], max_retries=0)
    gone = erased.containers.create(name="gone")
    erased.containers.files.create(gone.id, file=("a.txt", b"a"))
    stays = kept.containers.create(name="stays")
    operator = {"Authorization": f"Bearer {OPERATOR_KEY}"}
    answer = httpx.delete(f"{url}{OPERATOR_PREFIX}tenants/containers-erased", headers=operator, timeout=60)
    assert answer.status_code == 200, answer.text
    assert answer.json()["deleted"]["containers"] == 1
    assert not workspace_path(stack.settings.data_dir, gone.id).parent.exists()
    assert erased.containers.list().data == []
    assert kept.containers.retrieve(stays.id).id == stays.id
    assert workspace_path(stack.settings.data_dir, stays.id).exists()
    kept.containers.delete(stays.id)
