"""Per-tenant quotas on agents (both dialects), Agents API sessions and automations, and webhook endpoints: many
concurrent creations of one tenant get exactly the quota's worth through and the rest a 409 naming the setting,
on SQLite and on PostgreSQL (where counting then inserting would race without the quota's lock)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.agents_beta.test_automations import new_session_target
from tests.support.databases import postgres_database
from tests.support.scripted_model import text
from tests.support.stack import SCRIPTED_MODEL, Stack

BETA = {"OpenAI-Beta": "agents=v1"}
QUOTA = 3
ATTEMPTS = 8


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def quota_stack(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    if request.param == "sqlite":
        yield request.getfixturevalue("stack")
        return
    with postgres_database() as url:
        running = Stack(Path(tmp_path_factory.mktemp("pg-quotas")), store_url=url)
        try:
            yield running
        finally:
            running.close()


@pytest.fixture(scope="module")
def api(quota_stack: Stack) -> Iterator[tuple[Stack, str]]:
    quotas = {
        "max_agents_per_tenant": QUOTA,
        "max_sessions_per_tenant": QUOTA,
        "max_automations_per_tenant": QUOTA,
        "max_webhook_endpoints_per_tenant": QUOTA,
        "api_keys": ("quota:key-quota-0123",),
    }
    with quota_stack.other_api(quota_stack.settings.model_copy(update=quotas)) as url:
        yield quota_stack, url


def at_once(url: str, send: Callable[[httpx.Client], httpx.Response]) -> list[httpx.Response]:
    """`ATTEMPTS` requests of the tenant in flight together."""
    headers = {"Authorization": "Bearer key-quota-0123"}
    with httpx.Client(base_url=url, headers=headers, timeout=120) as http, ThreadPoolExecutor(ATTEMPTS) as pool:
        return list(pool.map(lambda _: send(http), range(ATTEMPTS)))


def assert_quota_held(answers: list[httpx.Response], setting: str) -> None:
    codes = sorted(answer.status_code for answer in answers)
    assert codes == [200] * QUOTA + [409] * (ATTEMPTS - QUOTA), [a.text for a in answers]
    refused = [answer for answer in answers if answer.status_code == 409]
    assert all(setting in answer.text for answer in refused), refused[0].text


def test_concurrent_agents_of_both_dialects_stop_at_the_quota(api: tuple[Stack, str]) -> None:
    _, url = api
    beta: Any = {"model": SCRIPTED_MODEL}
    assert_quota_held(
        at_once(url, lambda http: http.post("/v1/agents", json=beta, headers=BETA)), "DA_MAX_AGENTS_PER_TENANT"
    )
    llama: Any = {"agent_config": {"model": SCRIPTED_MODEL, "instructions": "x"}}
    assert_quota_held(at_once(url, lambda http: http.post("/v1/agents", json=llama)), "DA_MAX_AGENTS_PER_TENANT")


def test_concurrent_sessions_automations_and_endpoints_stop_at_their_quotas(api: tuple[Stack, str]) -> None:
    stack, url = api
    stack.model.script(*[text("hi") for _ in range(QUOTA)])
    session: Any = {"environment": {"type": "none"}, "agent": {"model": SCRIPTED_MODEL}, "input": "hi"}
    sessions = at_once(url, lambda http: http.post("/v1/agents/sessions", json=session, headers=BETA))
    assert_quota_held(sessions, "DA_MAX_SESSIONS_PER_TENANT")
    automation: Any = {
        "type": "periodic",
        "name": "n",
        "expression": "0 9 * * *",
        "timezone": "UTC",
        "target": new_session_target("x"),
    }
    automations = at_once(url, lambda http: http.post("/v1/agents/automations", json=automation, headers=BETA))
    assert_quota_held(automations, "DA_MAX_AUTOMATIONS_PER_TENANT")
    endpoint = {"name": "e", "url": "https://example.com/hook", "event_types": ["response.completed"]}
    endpoints = at_once(url, lambda http: http.post("/v1/webhook_endpoints", json=endpoint))
    assert_quota_held(endpoints, "DA_MAX_WEBHOOK_ENDPOINTS_PER_TENANT")
    with httpx.Client(base_url=url, headers={"Authorization": "Bearer key-quota-0123", **BETA}, timeout=60) as http:
        for answer in automations:  # their Schedules are the cluster's: leave none behind
            if answer.status_code == 200:
                assert http.delete(f"/v1/agents/automations/{answer.json()['id']}").status_code == 200
