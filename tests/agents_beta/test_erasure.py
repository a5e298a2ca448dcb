"""Erasing a tenant erases its Agents API agents and sessions with their turns; another tenant's stay."""

from __future__ import annotations

import httpx

from tests.operations.test_retention import OPERATOR_KEY, OPERATOR_PREFIX
from tests.support.processes import EVENT_SECONDS, wait_until
from tests.support.scripted_model import ScriptedModel, text
from tests.support.stack import SCRIPTED_MODEL, Stack

BETA = {"OpenAI-Beta": "agents=v1"}


def test_an_erased_tenant_loses_its_agents_and_sessions(stack: Stack, model: ScriptedModel) -> None:
    keys = ("alice:key-alice-beta-0123", "bob:key-bob-beta-4567")
    settings = stack.settings.model_copy(update={"api_keys": keys, "operator_key": OPERATOR_KEY})
    model.script(text("a"), text("b"))
    with stack.other_api(settings) as url:
        alice = httpx.Client(base_url=url, headers={"Authorization": "Bearer key-alice-beta-0123", **BETA}, timeout=60)
        bob = httpx.Client(base_url=url, headers={"Authorization": "Bearer key-bob-beta-4567", **BETA}, timeout=60)
        operator = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {OPERATOR_KEY}"}, timeout=60)
        agent = alice.post("/v1/agents", json={"model": SCRIPTED_MODEL}).json()["id"]
        body = {"environment": {"type": "none"}, "agent_id": agent, "input": "hi"}
        session = alice.post("/v1/agents/sessions", json=body).json()["id"]
        bobs = bob.post("/v1/agents/sessions", json={**body, "agent_id": None, "agent": {"model": SCRIPTED_MODEL}})
        path = f"/v1/agents/sessions/{session}"
        wait_until(lambda: alice.get(path).json()["status"] == "idle", "alice's session idle", EVENT_SECONDS)
        turn = alice.get(f"/v1/agents/sessions/{session}/turns").json()["data"][0]["id"]

        erased = operator.delete(f"{OPERATOR_PREFIX}tenants/alice")
        assert erased.status_code == 200 and erased.json()["deleted"]["agent_sessions"] == 2, erased.text
        assert alice.get(f"/v1/agents/sessions/{session}").status_code == 404
        assert alice.get(f"/v1/agents/{agent}").status_code == 404
        assert alice.get("/v1/agents/sessions").json()["data"] == []
        assert stack.background.run(stack.store.turns.turn_status(turn)) is None  # its turn went with it
        assert bob.get(f"/v1/agents/sessions/{bobs.json()['id']}").status_code == 200
