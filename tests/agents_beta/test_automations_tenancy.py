"""Automations are their tenant's: another tenant's key gets the 404 of an id that never existed on every
automation route, cannot aim an automation at the owner's session, and the owner's automation is untouched."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from openai import OpenAI

from tests.support.scripted_model import ScriptedModel, text
from tests.support.stack import SCRIPTED_MODEL, Stack

OWNER_KEY = "auto-owner-key-0123"
OTHER_KEY = "auto-other-key-4567"
BETA = {"OpenAI-Beta": "agents=v1"}


@pytest.fixture(scope="module")
def keyed_api(stack: Stack) -> Iterator[str]:
    with stack.other_api(stack.settings.model_copy(update=dict(api_keys=(OWNER_KEY, OTHER_KEY)))) as url:
        yield url


def _requests(automation_id: str, invocation_id: str, session_id: str) -> list[tuple[str, str, Any]]:
    path = f"/v1/agents/automations/{automation_id}"
    aimed = {
        "type": "once",
        "name": "n",
        "run_at": int(time.time()) + 600,
        "target": {"type": "existing_session", "session_id": session_id, "instructions": "x"},
    }
    return [
        ("get", path, None),
        ("post", path, {"name": "stolen"}),
        ("post", f"{path}/pause", None),
        ("post", f"{path}/resume", None),
        ("post", f"{path}/invocations", None),
        ("get", f"{path}/invocations", None),
        ("get", f"{path}/invocations/{invocation_id}", None),
        ("post", "/v1/agents/automations", aimed),
        ("delete", path, None),
    ]


def test_another_tenant_gets_404_on_every_automation_route(keyed_api: str, model: ScriptedModel) -> None:
    owner = OpenAI(base_url=f"{keyed_api}/v1", api_key=OWNER_KEY, max_retries=0)
    model.script(text("Hi."), text("Checked."))
    session = owner.beta.agents.sessions.create(
        environment={"type": "none"}, agent={"model": SCRIPTED_MODEL}, input="Hi"
    )
    automation = owner.beta.agents.automations.create(
        type="periodic",
        name="owned",
        expression="0 9 * * *",
        timezone="UTC",
        target={"type": "existing_session", "session_id": session.id, "instructions": "Check in."},
    )
    for _ in range(300):
        if owner.beta.agents.sessions.retrieve(session.id).status == "idle":
            break
        time.sleep(0.05)
    invocation = owner.beta.agents.automations.invocations.create(automation.id)

    with httpx.Client(
        base_url=keyed_api, timeout=30, headers={"Authorization": f"Bearer {OTHER_KEY}", **BETA}
    ) as other:
        owned = _requests(automation.id, invocation.id, session.id)
        never = _requests("auto_unknown", "ainv_unknown", "sess_unknown")
        for (method, path, body), (_, unknown_path, unknown_body) in zip(owned, never, strict=True):
            refused = other.request(method, path, json=body)
            unknown = other.request(method, unknown_path, json=unknown_body)
            assert refused.status_code == unknown.status_code == 404, (method, path, refused.text)
            assert refused.json()["error"]["message"].split(" ")[0] == unknown.json()["error"]["message"].split(" ")[0]
        assert other.get("/v1/agents/automations").json()["data"] == []

    kept = owner.beta.agents.automations.retrieve(automation.id)
    assert kept.name == "owned" and kept.status == "active"
    assert [found.id for found in owner.beta.agents.automations.list().data] == [automation.id]
    assert [i.id for i in owner.beta.agents.automations.invocations.list(automation.id).data] == [invocation.id]
