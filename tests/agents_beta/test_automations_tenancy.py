"""Automations are their tenant's: another tenant's key gets the 404 of an id that never existed on every
automation route, cannot aim an automation at the owner's session, and the owner's automation is untouched."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from openai import OpenAI
from sqlalchemy import select
from temporalio.service import RPCError, RPCStatusCode

from store.agent_sessions.automation_tables import AutomationRow
from store.tenancy.tables import SessionBudgetRow
from tests.operations.test_retention import OPERATOR_KEY, OPERATOR_PREFIX
from tests.support.processes import EVENT_SECONDS, wait_until
from tests.support.scripted_model import ScriptedModel, text
from tests.support.spend_control import limit_body
from tests.support.stack import SCRIPTED_MODEL, Stack
from workflows.automation_run import schedule_id

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


AUTOMATION_ROUTES = {
    (method, path) for method, path, _ in _requests("{automation_id}", "{invocation_id}", "sess_unknown")
} | {("get", "/v1/agents/automations")}
"""Every automation route: the walk below covers each, and tests/security's walk of the OpenAPI document
counts on this set."""


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
    wait_until(lambda: owner.beta.agents.sessions.retrieve(session.id).status == "idle", "idle", EVENT_SECONDS)
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


def test_an_erased_tenant_loses_its_automations_and_its_sessions_spend(stack: Stack, model: ScriptedModel) -> None:
    keys = ("carol:key-carol-auto-0123",)
    settings = stack.settings.model_copy(update={"api_keys": keys, "operator_key": OPERATOR_KEY})
    model.script(text("Hi."))
    with stack.other_api(settings) as url:
        carol = OpenAI(base_url=f"{url}/v1", api_key="key-carol-auto-0123", max_retries=0)
        agent: Any = {"model": SCRIPTED_MODEL}
        session = carol.beta.agents.sessions.create(
            environment={"type": "none"}, agent=agent, input="Hi", extra_body=limit_body(100)
        )
        target: Any = {"type": "existing_session", "session_id": session.id, "instructions": "x"}
        automation = carol.beta.agents.automations.create(
            type="periodic", name="n", expression="0 9 * * *", timezone="UTC", target=target
        )
        carol.beta.agents.automations.pause(automation.id)  # a paused Schedule never runs to delete itself
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {OPERATOR_KEY}"}, timeout=60) as operator:
            erased = operator.delete(f"{OPERATOR_PREFIX}tenants/carol")
        assert erased.status_code == 200 and erased.json()["deleted"]["automations"] == 1, erased.text
        with pytest.raises(openai.NotFoundError):
            carol.beta.agents.automations.retrieve(automation.id)

    async def schedule_left() -> bool:
        try:
            await stack.client.get_schedule_handle(schedule_id(automation.id)).describe()
        except RPCError as missing:
            assert missing.status == RPCStatusCode.NOT_FOUND
            return False
        return True

    assert not stack.background.run(schedule_left())

    def left(tx: Any) -> list[int]:
        automations = select(AutomationRow).where(AutomationRow.automation_id == automation.id)
        budgets = select(SessionBudgetRow).where(SessionBudgetRow.session_id == session.id)
        return [len(tx.execute(automations).all()), len(tx.execute(budgets).all())]

    assert stack.background.run(stack.store.database.read(left)) == [0, 0]
