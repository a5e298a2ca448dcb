"""Decisions a person can stand behind: an approval or rejection carries its reason (a rejection's reaches the model
as the call's answer), every decision is recorded with who made it (the key's id and tenant, never the key), when
and what, and an approval nobody decides by DA_APPROVAL_TIMEOUT is denied by the system, which a request may
shorten but not lengthen. The inbox's age counts from the pause, not the turn's start."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from api.guards.tenancy import principals
from tests.agents_beta.test_mcp_tools import mcp_tool as session_mcp_tool
from tests.agents_beta.test_spend_control import wait_status
from tests.inbox.test_inbox_actions import act, completed_response, item_of
from tests.inbox.waiting import NONE, Tenant
from tests.responses.test_responses_tools import mcp_tool as response_mcp_tool
from tests.support.processes import EVENT_SECONDS, wait_until
from tests.support.scripted_model import ScriptedModel, ThreadedServer, text, tool_call
from tests.support.stack import SCRIPTED_MODEL, Stack

INBOX_DECISION_ROUTES = {("get", "/v1/inbox/{turn_id}/decisions")}
"""Tenancy walked here: another tenant's turn has no decisions to show (404)."""

APPROVAL_TIMEOUT = 2.0
"""DA_APPROVAL_TIMEOUT of the module's second API, in seconds."""


class Keyed:
    """The module's tenant on two APIs: one without an approval timeout, one with DA_APPROVAL_TIMEOUT."""

    def __init__(self, plain: Tenant, timed: Tenant, other: Tenant, tenant: str, key_id: str, key: str) -> None:
        self.plain, self.timed, self.other = plain, timed, other
        self.tenant, self.key_id, self.key = tenant, key_id, key


@pytest.fixture(scope="module")
def keyed(stack: Stack) -> Iterator[Keyed]:
    suffix = uuid.uuid4().hex[:8]
    tenant, key, other_key = f"decide-{suffix}", f"key-d-{suffix}", f"key-o-{suffix}"
    entries = (f"{tenant}:{key}", f"other-{suffix}:{other_key}")
    [key_id] = [who.key_id for who in principals(entries).values() if who.tenant == tenant]
    settings = stack.settings.model_copy(update=dict(api_keys=entries))
    timed_settings = settings.model_copy(update=dict(approval_timeout=timedelta(seconds=APPROVAL_TIMEOUT)))
    with stack.other_api(settings) as url, stack.other_api(timed_settings) as timed_url:
        made = Keyed(Tenant(url, key), Tenant(timed_url, key), Tenant(url, other_key), tenant, key_id, key)
        yield made
        for client in (made.plain, made.timed, made.other):
            client.close()


def decisions(tenant: Tenant, turn_id: str) -> list[dict[str, Any]]:
    answer = tenant.http.get(f"/v1/inbox/{turn_id}/decisions")
    assert answer.status_code == 200, answer.text
    assert "key-d-" not in answer.text  # the key itself is never shown
    return list(answer.json()["data"])


def approval_session(tenant: Tenant, model: ScriptedModel, mcp: ThreadedServer) -> Any:
    model.script(tool_call("add_numbers", {"a": 4, "b": 5}), text("done"))
    session = tenant.openai.beta.agents.sessions.create(
        environment=NONE,
        agent={"model": SCRIPTED_MODEL, "tools": [session_mcp_tool(mcp, ["add_numbers"])]},  # approval: "always"
        input="add 4 and 5",
    )
    waiting = wait_status(tenant.openai, session.id, "requires_action")
    assert waiting.status == "requires_action", waiting
    return waiting


def tool_messages(model: ScriptedModel) -> str:
    return str([message for message in model.requests[-1]["messages"] if message["role"] == "tool"])


def test_an_agents_api_rejection_with_a_reason_reaches_the_model_and_is_recorded_with_who_when_and_what(
    keyed: Keyed, model: ScriptedModel, mcp: ThreadedServer
) -> None:
    waiting = approval_session(keyed.plain, model, mcp)
    [request] = waiting.required_actions
    [item] = [i for i in keyed.plain.inbox(kind="approval", limit=100)["data"] if i["session_id"] == waiting.id]
    assert item["approvals_expire_at"] is None  # no DA_APPROVAL_TIMEOUT: it waits
    before = datetime.now(UTC)
    reason = "not on the production ledger"

    answer = act(keyed.plain, item["id"], action="reject", approval_request_id=request.request_id, reason=reason)

    assert answer.status_code == 200, answer.text
    assert wait_status(keyed.plain.openai, waiting.id, "idle").status == "idle"
    assert f"denied by the user: {reason}" in tool_messages(model)  # the model read why
    [decision] = decisions(keyed.plain, item["id"])
    assert decision["approval_request_id"] == request.request_id and decision["tool_name"] == "add_numbers"
    assert (decision["decision"], decision["reason"]) == ("denied", reason)
    assert (decision["decided_by"], decision["tenant"]) == (keyed.key_id, keyed.tenant)
    assert before <= datetime.fromisoformat(decision["decided_at"]) <= datetime.now(UTC)
    assert keyed.other.http.get(f"/v1/inbox/{item['id']}/decisions").status_code == 404


def test_an_approval_with_a_reason_sent_as_the_dialects_own_request_is_recorded_too(
    keyed: Keyed, model: ScriptedModel, mcp: ThreadedServer
) -> None:
    waiting = approval_session(keyed.plain, model, mcp)
    [request] = waiting.required_actions
    event: Any = {
        "type": "agent.session.input.mcp_approval_request_result",
        "request_id": request.request_id,
        "response": {"type": "mcp_tool_call", "decision": "approve", "reason": "checked the sum"},
    }
    unreadable = keyed.plain.http.post(
        f"/v1/agents/sessions/{waiting.id}/events",
        headers={"OpenAI-Beta": "agents=v1"},
        json={"events": [event | {"response": event["response"] | {"reason": 42}}]},
    )
    assert unreadable.status_code == 400 and "response.reason" in unreadable.text, unreadable.text
    keyed.plain.openai.beta.agents.sessions.events.create(waiting.id, events=[event])
    assert wait_status(keyed.plain.openai, waiting.id, "idle").status == "idle"
    [turn] = keyed.plain.openai.beta.agents.sessions.turns.list(waiting.id).data
    [decision] = decisions(keyed.plain, turn.id)
    assert (decision["decision"], decision["reason"], decision["decided_by"]) == (
        "approved",
        "checked the sum",
        keyed.key_id,
    )
    assert "9" in tool_messages(model)  # it ran


def test_an_undecided_approval_is_denied_by_the_system_at_the_approval_timeout(
    keyed: Keyed, model: ScriptedModel, mcp: ThreadedServer
) -> None:
    waiting = approval_session(keyed.timed, model, mcp)
    [item] = [i for i in keyed.timed.inbox(kind="approval", limit=100)["data"] if i["session_id"] == waiting.id]
    assert item["approvals_expire_at"] - item["waiting_since"] in (APPROVAL_TIMEOUT, APPROVAL_TIMEOUT + 1)

    done = wait_status(keyed.timed.openai, waiting.id, "idle", seconds=APPROVAL_TIMEOUT + EVENT_SECONDS)

    assert done.status == "idle", done
    assert "denied by the system: approval timed out" in tool_messages(model)
    [decision] = decisions(keyed.timed, item["id"])
    assert (decision["decision"], decision["reason"]) == ("denied", "approval timed out")
    assert (decision["decided_by"], decision["tenant"]) == ("system", keyed.tenant)
    late = act(
        keyed.timed, item["id"], action="approve", approval_request_id=item["approvals"][0]["approval_request_id"]
    )
    assert late.status_code == 409, late.text  # decided already, by the deadline


def test_a_request_may_shorten_the_approval_timeout_but_not_lengthen_it(
    keyed: Keyed, model: ScriptedModel, mcp: ThreadedServer
) -> None:
    longer = keyed.timed.http.post(
        "/v1/responses",
        json={
            "model": SCRIPTED_MODEL,
            "input": "add",
            "tools": [response_mcp_tool(mcp, "always") | {"approval_timeout": 60}],
        },
    )
    assert longer.status_code == 400, longer.text
    assert "approval_timeout" in longer.text and "only shorten" in longer.text

    model.script(tool_call("add_numbers", {"a": 4, "b": 5}), text("I was not allowed to add them."))
    shorter = keyed.plain.openai.responses.create(
        model=SCRIPTED_MODEL,
        input="add",
        tools=[response_mcp_tool(mcp, "always") | {"approval_timeout": 1}],  # type: ignore[list-item]
    )
    assert [item.type for item in shorter.output] == ["mcp_list_tools", "mcp_approval_request"]
    turn_id = item_of_response(keyed.plain, shorter.id)

    wait_until(lambda: len(model.requests) == 2 or None, "the model's call after the denial", 1 + EVENT_SECONDS)
    assert "denied by the system: approval timed out" in tool_messages(model)
    [decision] = wait_until(lambda: decisions(keyed.plain, turn_id) or None, "the decision", EVENT_SECONDS)
    assert (decision["decided_by"], decision["reason"]) == ("system", "approval timed out")


def item_of_response(tenant: Tenant, response_id: str) -> str:
    [item] = [i for i in tenant.inbox(kind="approval", limit=100)["data"] if i["response_id"] == response_id]
    return str(item["id"])


def test_the_inbox_age_counts_from_the_pause_not_the_turns_start(
    keyed: Keyed, model: ScriptedModel, mcp: ThreadedServer
) -> None:
    model.script(tool_call("add_numbers", {"a": 1, "b": 2}), tool_call("add_numbers", {"a": 3, "b": 4}))
    first = keyed.plain.openai.responses.create(
        model=SCRIPTED_MODEL,
        input="add twice",
        tools=[response_mcp_tool(mcp, "always")],  # type: ignore[list-item]
    )
    turn_id = item_of_response(keyed.plain, first.id)
    time.sleep(2.5)  # the turn is old; its second pause will be new
    answer = act(keyed.plain, turn_id, action="approve", approval_request_id=first.output[1].id)
    assert answer.status_code == 200, answer.text
    second = completed_response(keyed.plain, answer.json()["result"]["id"])
    assert second.output[-1].type == "mcp_approval_request"  # paused again, for the second call

    item = item_of(keyed.plain, turn_id)
    assert item["waiting_since"] - item["created_at"] >= 2
    assert item["age_seconds"] <= int(time.time()) - item["waiting_since"] + 1
    assert item["age_seconds"] < int(time.time()) - item["created_at"] - 1
