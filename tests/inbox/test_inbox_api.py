"""`GET /v1/inbox` across the three dialects on a real API: a llama-stack turn paused on a client tool, a response
waiting on a function call's output, a response waiting on an MCP approval, an Agents API session waiting on a
tool result and one held by its spend limit, all of one tenant, oldest first, in keyset pages; another tenant
sees none of them."""

from __future__ import annotations

from tests.agents_beta.test_spend_control import paused_on_budget
from tests.inbox.waiting import (
    Tenant,
    approval_response,
    function_call_response,
    paused_llama_turn,
    waiting_session,
)
from tests.support.scripted_model import ScriptedModel, ThreadedServer
from tests.support.stack import SCRIPTED_MODEL

INBOX_ROUTES = {("get", "/v1/inbox")}
"""Tenancy walked here: another tenant's inbox is empty."""


def test_every_waiting_turn_of_the_three_dialects_oldest_first_paged_and_only_for_its_tenant(
    tenants: tuple[Tenant, Tenant], model: ScriptedModel, mcp: ThreadedServer
) -> None:
    mine, other = tenants
    llama = paused_llama_turn(mine, model)
    function = function_call_response(mine, model)
    approval = approval_response(mine, model, mcp)
    session = waiting_session(mine, model)
    held, _ = paused_on_budget(mine.openai, model, limit_cents=1)

    items = mine.inbox(limit=100)["data"]
    assert [(item["dialect"], item["kind"]) for item in items] == [
        ("llama_stack", "tool_output"),
        ("responses", "tool_output"),
        ("responses", "approval"),
        ("agents", "tool_output"),
        ("agents", "spend_limit"),
    ]
    first, second, third, fourth, fifth = items
    assert first["id"] == llama["turn_id"] and first["agent_id"] == llama["agent_id"]
    assert first["session_id"] == llama["session_id"]
    assert [(c["name"], c["arguments"]) for c in first["tool_calls"]] == [
        ("get_boiling_point", '{"liquid_name": "polyjuice"}')
    ]
    assert first["act"]["actions"] == ["submit_tool_output"]
    assert second["response_id"] == function.id and second["model"] == SCRIPTED_MODEL
    assert [c["call_id"] for c in second["tool_calls"]] == [function.output[0].call_id]
    [request] = third["approvals"]
    assert request["approval_request_id"] == approval.output[1].id
    assert (request["server_label"], request["name"]) == ("calc", "add_numbers")
    assert third["tool_calls"] == [] and third["act"]["actions"] == ["approve", "reject"]
    assert fourth["session_id"] == session.id
    assert [c["call_id"] for c in fourth["tool_calls"]] == [session.required_actions[0].call_id]
    assert fifth["session_id"] == held.id and fifth["act"]["actions"] == ["lift_limit"]
    assert all(item["age_seconds"] >= 0 for item in items)
    assert [item["created_at"] for item in items] == sorted(item["created_at"] for item in items)

    paged: list[str] = []
    page = mine.inbox(limit=2)
    while True:
        paged += [item["id"] for item in page["data"]]
        if not page["has_more"]:
            break
        assert len(page["data"]) == 2
        page = mine.inbox(limit=2, after=page["next_after"])
    assert paged == [item["id"] for item in items]

    assert [item["id"] for item in mine.inbox(kind="approval")["data"]] == [third["id"]]
    assert [item["id"] for item in mine.inbox(kind="spend_limit")["data"]] == [fifth["id"]]
    assert [i["id"] for i in mine.inbox(kind="tool_output")["data"]] == [first["id"], second["id"], fourth["id"]]
    assert [item["id"] for item in mine.inbox(agent_id=llama["agent_id"])["data"]] == [first["id"]]
    assert mine.inbox(older_than=3600)["data"] == []

    assert other.inbox() == {"object": "list", "data": [], "has_more": False, "next_after": None}


def test_a_bad_cursor_or_kind_is_refused_by_name(tenants: tuple[Tenant, Tenant]) -> None:
    mine, _ = tenants
    bad_cursor = mine.http.get("/v1/inbox", params={"after": "not-a-cursor"})
    assert bad_cursor.status_code == 400 and "after" in bad_cursor.text
    bad_kind = mine.http.get("/v1/inbox", params={"kind": "everything"})
    assert bad_kind.status_code in (400, 422) and "kind" in bad_kind.text
