"""Acting on inbox items through `POST /v1/inbox/{id}/actions`: each dialect's turn goes on exactly as if its own
client had answered, and a second submit of the same item is answered `already_answered`."""

from __future__ import annotations

from typing import Any

import httpx

from tests.agents_beta.test_spend_control import paused_on_budget, wait_status
from tests.inbox.waiting import Tenant, approval_response, function_call_response, paused_llama_turn, waiting_session
from tests.support.processes import EVENT_SECONDS, wait_until
from tests.support.scripted_model import ScriptedModel, ThreadedServer, text

INBOX_ACTION_ROUTES = {("post", "/v1/inbox/{turn_id}/actions")}
"""Tenancy walked here: another tenant cannot answer a turn."""


def item_of(tenant: Tenant, turn_id: str) -> dict[str, Any]:
    [item] = [item for item in tenant.inbox(limit=100)["data"] if item["id"] == turn_id]
    return item


def act(tenant: Tenant, turn_id: str, **body: Any) -> httpx.Response:
    return tenant.http.post(f"/v1/inbox/{turn_id}/actions", json=body)


def outputs_for(item: dict[str, Any], output: str) -> dict[str, str]:
    return {call["call_id"]: output for call in item["tool_calls"]}


def assert_already_answered(answer: httpx.Response) -> None:
    assert answer.status_code == 409, answer.text
    assert answer.json()["detail"].startswith("already_answered: ")


def completed_response(tenant: Tenant, response_id: str) -> Any:
    def done() -> Any:
        response = tenant.openai.responses.retrieve(response_id)
        return response if response.status == "completed" else None

    return wait_until(done, f"response {response_id} completed", EVENT_SECONDS)


def test_a_llama_stack_turn_answered_from_the_inbox_completes_and_a_second_submit_is_already_answered(
    tenants: tuple[Tenant, Tenant], model: ScriptedModel
) -> None:
    mine, _ = tenants
    paused = paused_llama_turn(mine, model)
    item = item_of(mine, paused["turn_id"])
    model.script(text("It boils at 42 degrees."))

    answer = act(mine, item["id"], action="submit_tool_output", outputs=outputs_for(item, "42"))

    assert answer.status_code == 200, answer.text
    turn = answer.json()["result"]
    assert turn["status"] == "completed" and "42 degrees" in turn["output_message"]["content"]
    assert model.requests[-1]["messages"][-1]["content"] == "42"  # the model read the person's output
    assert_already_answered(act(mine, item["id"], action="submit_tool_output", outputs=outputs_for(item, "43")))
    assert all(i["id"] != item["id"] for i in mine.inbox(limit=100)["data"])


def test_a_responses_function_call_answered_from_the_inbox_continues_the_chain(
    tenants: tuple[Tenant, Tenant], model: ScriptedModel
) -> None:
    mine, _ = tenants
    first = function_call_response(mine, model)
    item = item_of(mine, next(i["id"] for i in mine.inbox(limit=100)["data"] if i["response_id"] == first.id))
    model.script(text("Oslo is rainy."))

    answer = act(mine, item["id"], action="submit_tool_output", outputs=outputs_for(item, "rain, 8 C"))

    assert answer.status_code == 200, answer.text
    continued = answer.json()["result"]
    assert continued["previous_response_id"] == first.id
    done = completed_response(mine, continued["id"])
    assert done.output_text.strip() == "Oslo is rainy."
    assert_already_answered(act(mine, item["id"], action="submit_tool_output", outputs=outputs_for(item, "x")))


def test_an_mcp_call_approved_from_the_inbox_runs_and_one_rejected_with_a_reason_tells_the_model_why(
    tenants: tuple[Tenant, Tenant], model: ScriptedModel, mcp: ThreadedServer
) -> None:
    mine, _ = tenants
    approved = approval_response(mine, model, mcp)
    rejected = approval_response(mine, model, mcp)
    by_response = {item["response_id"]: item for item in mine.inbox(kind="approval", limit=100)["data"]}
    approve_item, reject_item = by_response[approved.id], by_response[rejected.id]

    model.script(text("4 + 5 = 9"))
    [request] = approve_item["approvals"]
    answer = act(mine, approve_item["id"], action="approve", approval_request_id=request["approval_request_id"])
    assert answer.status_code == 200, answer.text
    done = completed_response(mine, answer.json()["result"]["id"])
    [call] = [item for item in done.output if item.type == "mcp_call"]
    assert call.output == "9"

    model.script(text("I may not add them."))
    [request] = reject_item["approvals"]
    rejected_id = request["approval_request_id"]
    reason = "numbers are confidential"
    answer = act(mine, reject_item["id"], action="reject", approval_request_id=rejected_id, reason=reason)
    assert answer.status_code == 200, answer.text
    done = completed_response(mine, answer.json()["result"]["id"])
    assert not [item for item in done.output if item.type == "mcp_call" and item.output == "9"]
    assert reason in str(model.requests[-1]["messages"])  # the rejection's reason reached the model
    assert_already_answered(act(mine, reject_item["id"], action="approve", approval_request_id=rejected_id))


def test_an_agents_api_session_answered_and_one_held_by_its_limit_lifted_from_the_inbox_both_finish(
    tenants: tuple[Tenant, Tenant], model: ScriptedModel
) -> None:
    mine, _ = tenants
    session = waiting_session(mine, model)
    [item] = [i for i in mine.inbox(limit=100)["data"] if i["session_id"] == session.id]
    model.script(text("Lima is cloudy."))
    answer = act(mine, item["id"], action="submit_tool_output", outputs=outputs_for(item, "cloudy"))
    assert answer.status_code == 200, answer.text
    assert wait_status(mine.openai, session.id, "idle").status == "idle"
    assert_already_answered(act(mine, item["id"], action="submit_tool_output", outputs=outputs_for(item, "x")))

    held, _ = paused_on_budget(mine.openai, model, limit_cents=1)
    [item] = [i for i in mine.inbox(kind="spend_limit", limit=100)["data"] if i["session_id"] == held.id]
    answer = act(mine, item["id"], action="lift_limit", limit=1_000_000)
    assert answer.status_code == 200, answer.text
    assert wait_status(mine.openai, held.id, "idle").status == "idle"
    assert_already_answered(act(mine, item["id"], action="lift_limit"))


def test_another_tenant_cannot_answer_and_an_incomplete_answer_is_refused_by_name(
    tenants: tuple[Tenant, Tenant], model: ScriptedModel
) -> None:
    mine, other = tenants
    paused = paused_llama_turn(mine, model)
    item = item_of(mine, paused["turn_id"])

    assert_already_answered(act(other, item["id"], action="submit_tool_output", outputs=outputs_for(item, "x")))
    missing = act(mine, item["id"], action="submit_tool_output")
    assert missing.status_code == 400 and "outputs" in missing.text
    wrong = act(mine, item["id"], action="submit_tool_output", outputs={"call-unknown": "x"})
    assert wrong.status_code == 409  # answers none of the calls the turn waits for
    assert item_of(mine, paused["turn_id"])["tool_calls"] == item["tool_calls"]  # still waiting, untouched
