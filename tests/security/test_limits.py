"""Limits: lists come in pages, and a key's rate, open streams, agents' iterations, sessions, turns
and toolgroups are bounded. Hitting a limit is a 4xx that says which, and it changes nothing."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from configuration.settings import OFFLINE_MODEL_ID
from tests.support.rest import sse_events
from tests.support.scripted_model import ScriptedModel, text
from tests.support.stack import SCRIPTED_MODEL, Stack

AGENT = {"agent_config": {"model": OFFLINE_MODEL_ID, "instructions": "Be brief."}}


def _keyed(url: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=url, timeout=60, headers={"Authorization": f"Bearer {key}"})


@pytest.fixture(scope="module")
def limited_api(stack: Stack) -> Iterator[str]:
    settings = stack.settings.model_copy(
        update=dict(
            api_keys=("streams-key-0002", "streams-key-0003", "caps-key-0004"),
            max_streams_per_key=1,
            max_infer_iters=20,
            max_sessions_per_agent=2,
            max_turns_per_session=2,
            max_toolgroups_per_tenant=1,
        )
    )
    with stack.other_api(settings) as url:
        yield url


@pytest.fixture(scope="module")
def bulk_api(stack: Stack) -> Iterator[str]:
    """Default limits; its own key, so its tenant's agents are only this test's."""
    with stack.other_api(stack.settings.model_copy(update=dict(api_keys=("bulk-key-0001",)))) as url:
        yield url


def test_two_thousand_agents_list_in_pages(bulk_api: str) -> None:
    with _keyed(bulk_api, "bulk-key-0001") as http:

        def create(_: int) -> str:
            return http.post("/v1/agents", json=AGENT).raise_for_status().json()["agent_id"]

        with ThreadPoolExecutor(8) as pool:
            created = set(pool.map(create, range(2000)))
        assert len(created) == 2000

        first = http.get("/v1/agents").json()
        assert len(first["data"]) == 100 and first["has_more"] is True  # the default page, not all 2,000
        assert len(http.get("/v1/agents", params={"limit": -1}).json()["data"]) == 1000  # at most the max page
        assert len(http.get("/v1/agents", params={"limit": 5000}).json()["data"]) == 1000

        seen: list[str] = []
        start = 0
        while True:
            page = http.get("/v1/agents", params={"start_index": start, "limit": 300}).json()
            seen += [agent["agent_id"] for agent in page["data"]]
            start += 300
            if not page["has_more"]:
                break
        assert len(seen) == 2000 and set(seen) == created  # each exactly once
        assert seen[:100] == [agent["agent_id"] for agent in first["data"]]

        agent_id = seen[0]
        for _ in range(2):
            http.post(f"/v1/agents/{agent_id}/session", json={"session_name": "s"}).raise_for_status()
        sessions = http.get(f"/v1/agents/{agent_id}/sessions", params={"limit": 1}).json()
        assert len(sessions["data"]) == 1 and sessions["has_more"] is True
        last = http.get(f"/v1/agents/{agent_id}/sessions", params={"start_index": 1, "limit": 1}).json()
        assert len(last["data"]) == 1 and last["has_more"] is False
        assert http.get("/v1/agents", params={"start_index": -1}).status_code == 400


def test_a_key_over_its_request_rate_gets_429_with_retry_after_and_nothing_happens(stack: Stack) -> None:
    keys = ("rate-key-0001", "rate-key-0002")
    settings = stack.settings.model_copy(update=dict(api_keys=keys, rate_limit_per_minute=12, rate_limit_burst=3))
    with stack.other_api(settings) as url, _keyed(url, keys[0]) as limited, _keyed(url, keys[1]) as other:
        for _ in range(3):
            assert limited.get("/v1/agents").status_code == 200
        refused = limited.post("/v1/agents", json=AGENT)
        assert refused.status_code == 429, refused.text
        # A token every 5 s comes back (slow enough that a loaded machine's three requests cannot earn one):
        # the bucket's refill time, rounded up to whole seconds.
        assert 1 <= int(refused.headers["retry-after"]) <= 5
        assert "at most 12 a minute" in refused.json()["detail"]
        assert other.get("/v1/agents").status_code == 200  # another key has its own budget
        assert httpx.get(f"{url}/v1/health", timeout=60).status_code == 200  # probes are never limited

        time.sleep(int(refused.headers["retry-after"]))
        assert limited.get("/v1/agents").json()["data"] == []  # the refused create made nothing


def test_keyless_clients_are_never_rate_limited_however_many_and_fast(stack: Stack) -> None:
    """Without API keys the server is one user's: 24 concurrent clients at full speed get no 429, even
    with a rate configured that keyed callers would exceed many times over."""
    settings = stack.settings.model_copy(update=dict(rate_limit_per_minute=60, rate_limit_burst=3))
    with stack.other_api(settings) as url:

        def client_run(_: int) -> list[int]:
            with httpx.Client(base_url=url, timeout=60) as http:
                created = http.post("/v1/agents", json=AGENT).status_code
                return [created] + [http.get("/v1/agents", params={"limit": 1}).status_code for _ in range(9)]

        with ThreadPoolExecutor(24) as pool:
            statuses = [status for run in pool.map(client_run, range(24)) for status in run]

    assert len(statuses) == 240 and statuses.count(429) == 0
    assert set(statuses) == {200}


def _session(http: httpx.Client, agent_id: str) -> str:
    response = http.post(f"/v1/agents/{agent_id}/session", json={"session_name": "s"}).raise_for_status()
    return response.json()["session_id"]


def test_open_streams_per_key_are_capped_before_anything_starts(limited_api: str, model: ScriptedModel) -> None:
    model.script(text("slow", delay_seconds=30))
    with _keyed(limited_api, "streams-key-0002") as http, _keyed(limited_api, "streams-key-0003") as other:
        config = {"model": SCRIPTED_MODEL, "instructions": "x"}
        agent_id = http.post("/v1/agents", json={"agent_config": config}).raise_for_status().json()["agent_id"]
        first_session, second_session = _session(http, agent_id), _session(http, agent_id)
        ask = {"messages": [{"role": "user", "content": "hi"}], "stream": True}

        opened = threading.Event()
        first: dict[str, Any] = {}

        def hold_stream() -> None:
            with http.stream("POST", f"/v1/agents/{agent_id}/session/{first_session}/turn", json=ask) as response:
                first["status"] = response.status_code
                opened.set()
                first["body"] = response.read().decode()

        holder = threading.Thread(target=hold_stream)
        holder.start()
        assert opened.wait(30) and first["status"] == 200

        refused = http.post(f"/v1/agents/{agent_id}/session/{second_session}/turn", json=ask)
        assert refused.status_code == 429, refused.text
        assert "DA_MAX_STREAMS_PER_KEY" in refused.json()["detail"] and refused.headers["retry-after"]
        assert http.get(f"/v1/agents/{agent_id}/session/{second_session}").json()["turns"] == []  # nothing started
        assert http.get(f"/v1/agents/{agent_id}").status_code == 200  # other requests of the key go on
        other_agent = other.post("/v1/agents", json=AGENT).raise_for_status().json()["agent_id"]
        other_turns = f"/v1/agents/{other_agent}/session/{_session(other, other_agent)}/turn"
        assert other.post(other_turns, json=ask).status_code == 200  # another key has its own streams

        session = http.get(f"/v1/agents/{agent_id}/session/{first_session}").json()
        turn_id = session["turns"][0]["turn_id"]
        cancel = http.post(f"/v1/agents/{agent_id}/session/{first_session}/turn/{turn_id}/cancel")
        assert cancel.status_code == 200, cancel.text
        holder.join(30)
        assert "cancelled" in first["body"]

        # The ended stream gave its slot back.
        replay = http.get(f"/v1/agents/{agent_id}/session/{first_session}/turn/{turn_id}/events")
        assert replay.status_code == 200 and sse_events(replay)


def test_caps_on_iterations_sessions_turns_and_toolgroups(limited_api: str) -> None:
    with _keyed(limited_api, "caps-key-0004") as http:
        greedy = {"agent_config": {**AGENT["agent_config"], "max_infer_iters": 21}}
        refused = http.post("/v1/agents", json=greedy)
        assert refused.status_code == 400 and "at most 20" in refused.json()["detail"]
        assert http.get("/v1/agents").json()["data"] == []

        agent_id = http.post("/v1/agents", json=AGENT).raise_for_status().json()["agent_id"]
        session_id = _session(http, agent_id)
        _session(http, agent_id)
        third = http.post(f"/v1/agents/{agent_id}/session", json={"session_name": "third"})
        assert third.status_code == 409 and "DA_MAX_SESSIONS_PER_AGENT" in third.json()["detail"]
        assert len(http.get(f"/v1/agents/{agent_id}/sessions").json()["data"]) == 2

        turns = f"/v1/agents/{agent_id}/session/{session_id}/turn"
        for word in ("one", "two"):
            done = http.post(turns, json={"messages": [{"role": "user", "content": word}]})
            assert done.status_code == 200, done.text
        over = http.post(turns, json={"messages": [{"role": "user", "content": "three"}]})
        assert over.status_code == 409 and "DA_MAX_TURNS_PER_SESSION" in over.json()["detail"]
        assert len(http.get(f"/v1/agents/{agent_id}/session/{session_id}").json()["turns"]) == 2

        group = {"provider_id": "model-context-protocol", "mcp_endpoint": {"uri": "http://localhost:9/mcp"}}
        assert http.post("/v1/toolgroups", json={**group, "toolgroup_id": "mcp::one"}).status_code == 200
        second = http.post("/v1/toolgroups", json={**group, "toolgroup_id": "mcp::two"})
        assert second.status_code == 409 and "DA_MAX_TOOLGROUPS_PER_TENANT" in second.json()["detail"]
        listed = [g["identifier"] for g in http.get("/v1/toolgroups").json()["data"]]
        assert {"builtin::calculator", "builtin::rag"} <= set(listed)  # and the sandbox's, where there is one
        assert [identifier for identifier in listed if not identifier.startswith("builtin::")] == ["mcp::one"]
        http.delete("/v1/toolgroups/mcp::one")
