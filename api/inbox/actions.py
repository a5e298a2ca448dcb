"""Acting on an inbox item: `POST /v1/inbox/{id}/actions`, which the console's forms use too.

Each action is sent, inside this process, as the very request a client of the item's dialect would make — a
llama-stack resume, a Responses continuation with `function_call_output` or `mcp_approval_response` items, an
Agents API session's input events, a session update that lifts its spend limit — with the caller's own
credentials, through the whole application (guards included). So acting from the inbox takes exactly the path
the API does, with its checks and its exactly-once resume, and nothing here can drift from it.

Before sending, the item is read again: a call already answered, or a turn that waits no more, is answered
409 `already_answered`, which is what a second submit of the same form sees.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import httpx
from fastapi import APIRouter, HTTPException, Path, Request
from pydantic import BaseModel, Field, model_validator

from api.guards.tenancy import TenantDep
from api.services import ServicesDep
from store.inbox import InboxItem

router = APIRouter(tags=["Inbox"])

ActionName = Literal["submit_tool_output", "approve", "reject", "lift_limit"]
FORWARDED_HEADERS = ("authorization", "host", "origin")
"""What the dialect's request keeps of the caller's: who it is, and the host and origin the guards check."""


class InboxAction(BaseModel):
    action: ActionName
    outputs: dict[str, str] | None = Field(
        default=None, description="submit_tool_output: the output of every call the turn waits for, by call_id"
    )
    approval_request_id: str | None = Field(default=None, description="approve / reject: the request decided")
    reason: str | None = Field(default=None, max_length=2000, description="approve / reject: why, for the record")
    limit: int | None = Field(
        default=None, ge=0, description="lift_limit: the session's new limit in US cents; null removes the limit"
    )

    @model_validator(mode="after")
    def _complete(self) -> InboxAction:
        if self.action == "submit_tool_output" and not self.outputs:
            raise ValueError("submit_tool_output needs 'outputs': the output of each call, by call_id")
        if self.action in ("approve", "reject") and not self.approval_request_id:
            raise ValueError(f"{self.action} needs 'approval_request_id'")
        if self.reason is not None and self.action not in ("approve", "reject"):
            raise ValueError(f"reason: only approve and reject take a reason, not {self.action}")
        return self


class ActionResult(BaseModel):
    id: str
    object: Literal["inbox.action"] = "inbox.action"
    action: ActionName
    dialect: str
    status: Literal["accepted"] = "accepted"
    result: Any
    """What the dialect's own request answered (the turn, the response, or the session)."""


ALREADY_ANSWERED = "already_answered"
"""How a 409's detail begins when the item no longer waits for what the action answers."""


def already_answered(turn_id: str, what: str) -> HTTPException:
    return HTTPException(409, f"{ALREADY_ANSWERED}: {what} of turn {turn_id} was already answered (or waits no more)")


def _message(answer: Any) -> str:
    """The message of a dialect's refusal, whichever shape it has (`detail`, or OpenAI's `error.message`)."""
    if isinstance(answer, dict):
        if isinstance(answer.get("detail"), str):
            return str(answer["detail"])
        error = answer.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
    return str(answer)


def _check(item: InboxItem | None, turn_id: str, action: InboxAction) -> InboxItem:
    """The item as it waits now, if it still waits for what the action answers."""
    if item is None:
        raise already_answered(turn_id, "Nothing")
    if action.action == "lift_limit":
        if item.kind != "spend_limit":
            raise already_answered(turn_id, "The spend limit")
        return item
    if action.action == "submit_tool_output":
        waiting = {call.call_id for call in item.calls}
        given = set(action.outputs or {})
        if not waiting or not given & waiting:
            raise already_answered(turn_id, "The tool calls")
        if given != waiting:
            missing, unknown = sorted(waiting - given), sorted(given - waiting)
            raise HTTPException(
                400, f"outputs must answer exactly the calls waiting: missing {missing}, unknown {unknown}"
            )
        return item
    if action.approval_request_id not in {request.approval_request_id for request in item.approvals}:
        raise already_answered(turn_id, f"Approval request {action.approval_request_id}")
    return item


def _responses_request(item: InboxItem, action: InboxAction, record: Any) -> dict[str, Any]:
    """A continuation of the latest response: the same settings (nothing is inherited through
    previous_response_id), the answers as input items; in the background (it returns at once) unless the response
    was not stored, which only a synchronous request may be."""
    kept = ("model", "instructions", "tools", "tool_choice", "parallel_tool_calls", "temperature", "top_p", "text")
    stored = record.request if record is not None else {}
    body = {key: stored[key] for key in kept if stored.get(key) is not None}
    if record is not None and record.conversation_id:
        body["conversation"] = record.conversation_id
    else:
        body["previous_response_id"] = item.response_id
    if action.action == "submit_tool_output":
        outputs = action.outputs or {}
        body["input"] = [
            {"type": "function_call_output", "call_id": call.call_id, "output": outputs[call.call_id]}
            for call in item.calls
        ]
    else:
        decision: dict[str, Any] = {
            "type": "mcp_approval_response",
            "approval_request_id": action.approval_request_id,
            "approve": action.action == "approve",
        }
        if action.reason:
            decision["reason"] = action.reason
        body["input"] = [decision]
    return body | {"background": record is None or record.store}


def _agents_events(item: InboxItem, action: InboxAction) -> list[dict[str, Any]]:
    if action.action == "submit_tool_output":
        outputs = action.outputs or {}
        return [
            {
                "type": "agent.session.input.tool_result",
                "turn_id": item.turn_id,
                "call_id": call.call_id,
                "success": True,
                "output": outputs[call.call_id],
            }
            for call in item.calls
        ]
    response: dict[str, Any] = {
        "type": "mcp_tool_call",
        "decision": "approve" if action.action == "approve" else "deny",
    }
    if action.reason:
        response["reason"] = action.reason  # our extension of the Agents API's approval result
    return [
        {
            "type": "agent.session.input.mcp_approval_request_result",
            "request_id": action.approval_request_id,
            "response": response,
        }
    ]


async def dialect_request(services: Any, item: InboxItem, action: InboxAction) -> tuple[str, str, dict[str, Any]]:
    """The method, path and body a client of the item's dialect would send for this action."""
    if item.dialect == "llama_stack":
        path = f"/v1/agents/{item.agent_id}/session/{item.session_id}/turn/{item.turn_id}/resume"
        outputs = action.outputs or {}
        responses = [
            {"call_id": call.call_id, "tool_name": call.tool_name, "content": outputs[call.call_id]}
            for call in item.calls
        ]
        return "POST", path, {"tool_responses": responses, "stream": False}
    if item.dialect == "agents":
        if action.action == "lift_limit":
            limit = None if action.limit is None else {"limit": action.limit}
            return "POST", f"/v1/agents/sessions/{item.session_id}", {"spend_control": limit}
        return "POST", f"/v1/agents/sessions/{item.session_id}/events", {"events": _agents_events(item, action)}
    record = await services.store.responses.get(item.tenant_id, item.response_id) if item.response_id else None
    return "POST", "/v1/responses", _responses_request(item, action, record)


async def act(
    request: Request, services: Any, tenant: str, turn_id: str, action: InboxAction, headers: dict[str, str]
) -> ActionResult:
    """Send the action through the application as its dialect's request, with `headers` (the caller's
    credentials, host and origin); the console calls this with the key from its cookie."""
    item = _check(await services.store.inbox.waiting_turn(tenant, turn_id), turn_id, action)
    if action.action == "lift_limit" and item.dialect != "agents":
        raise HTTPException(400, "Only Agents API sessions have a spend limit")
    method, path, body = await dialect_request(services, item, action)
    sent = {name: value for name, value in headers.items() if name in FORWARDED_HEADERS}
    if item.dialect == "agents":
        sent["openai-beta"] = "agents=v1"
    transport = httpx.ASGITransport(app=request.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://inbox", timeout=None) as client:
        answer = await client.request(method, path, json=body, headers=sent)
    result = answer.json() if answer.content else None
    if answer.status_code >= 400:
        if await services.store.inbox.waiting_turn(tenant, turn_id) is None:
            raise already_answered(turn_id, "Everything")  # another submit won the race
        raise HTTPException(answer.status_code, _message(result))
    return ActionResult(id=turn_id, action=action.action, dialect=item.dialect, result=result)


@router.post("/inbox/{turn_id}/actions", response_model=ActionResult)
async def act_on_item(
    request: Request,
    services: ServicesDep,
    tenant: TenantDep,
    turn_id: Annotated[str, Path(max_length=64)],
    action: InboxAction,
) -> ActionResult:
    return await act(request, services, tenant, turn_id, action, dict(request.headers))
