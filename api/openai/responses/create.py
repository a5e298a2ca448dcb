"""Creating a response: a new turn, or the next segment of a turn that waits for these outputs.

A response whose input answers the client calls (or approval requests) a paused turn of the same tenant waits
for resumes that very workflow (the extended `submit_tool_responses` update), whichever way the request names
its context: previous_response_id, conversation, or the whole history replayed. Anything else starts a turn
whose prior context is the chain, the conversation or the replayed history, as neutral messages.

Every check runs before anything is written or resumed: a refused request leaves a waiting workflow as it was.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

from temporalio.common import SearchAttributePair

from api.openai.errors import OpenAIError, invalid
from api.openai.responses import ids, view
from api.openai.responses.compaction_items import (
    as_read,
    compact_threshold,
    compaction_first,
    open_compactions,
    refuse_interleaving,
)
from api.openai.responses.context import (
    check_tool_outputs,
    fit_context,
    parse_items,
    resolve_references,
    split_input,
    to_messages,
)
from api.openai.responses.input_items import (
    FunctionCallItem,
    FunctionCallOutputItem,
    InputItem,
    McpApprovalResponseItem,
    MessageItem,
)
from api.openai.responses.plan import check_approval_timeouts, mcp_credentials, summary, turn_plan, turn_settings
from api.openai.responses.request import CreateResponse
from api.services import Services
from api.turn_gateway import ResumeRejected, TurnNotRunning, TurnUnavailable
from api.turns.mcp_headers import keep_mcp_headers
from api.turns.sdk_retries import RETRY_WINDOW, is_sdk_retry, may_repeat
from domain.content import ToolResponse, UserMessage
from domain.turn_settings import ApprovalDecision
from domain.turns import TurnStatus
from store.responses.responses import ResponseRecord, ResponseStore, add_response
from tool_runtime.credential_seal import CredentialSeal
from tool_runtime.output_limit import truncate_content
from workflows.contracts import ToolResponsesSubmission, TurnStart
from workflows.first_model_call import first_inference
from workflows.search_attributes import CONVERSATION_ID

log = logging.getLogger(__name__)

_TURN_NAMESPACE = uuid.UUID("0b5a8a52-2f7e-4d0e-9a0f-6f3c1d2e4b71")
_NEW_ITEM_IDS = {
    "message": ids.new_message_id,
    "function_call": ids.new_function_call_id,
    "function_call_output": ids.new_function_call_output_id,
    "mcp_approval_response": ids.new_approval_response_id,
}


def response_id_for(tenant: str, idempotency_key: str | None) -> str:
    """A fresh id, or with an Idempotency-Key the same id for every retry of the request (per tenant)."""
    if idempotency_key is None:
        return ids.new_response_id()
    return "resp_" + hashlib.sha256(f"{tenant}\0{idempotency_key}".encode()).hexdigest()[:48]


def turn_id_of(response_id: str) -> str:
    """The id of the turn a response begins (derived, so a keyed retry finds the same turn)."""
    return str(uuid.uuid5(_TURN_NAMESPACE, response_id))


def request_hash_of(tenant: str, body: bytes) -> str:
    return hashlib.sha256(tenant.encode() + b"\0" + body).hexdigest()


async def earlier_attempt(
    services: Services, responses: ResponseStore, tenant: str, request_hash: str, retry_count: str | None
) -> ResponseRecord | None:
    """The response an SDK's own retry of a create without an Idempotency-Key repeats (api/turns/sdk_retries.py):
    the tenant's latest from the same request body lately, if its turn `may_repeat`."""
    if not is_sdk_retry(retry_count):
        return None
    found = await responses.latest_with_request(tenant, request_hash, datetime.now(UTC) - RETRY_WINDOW)
    if found is None or not may_repeat(await services.store.turns.turn_status(found.turn_id)):
        return None
    return found


def stored_input(items: list[InputItem]) -> list[dict[str, Any]]:
    """The input items as input_items lists and conversations show them: each with an id, messages with parts."""
    stored = []
    for item in items:
        body = item.model_dump(mode="json", exclude_none=True, by_alias=True)
        body.setdefault("id", _NEW_ITEM_IDS.get(body["type"], ids.new_item_id)())
        if isinstance(item, MessageItem):
            if isinstance(item.content, str):
                kind = "output_text" if item.role == "assistant" else "input_text"
                part: dict[str, Any] = {"type": kind, "text": item.content}
                if kind == "output_text":
                    part["annotations"] = []
                body["content"] = [part]
            body.setdefault("status", "completed")
        elif body["type"] in ("function_call", "function_call_output", "mcp_call"):
            body.setdefault("status", "completed")
        stored.append(body)
    return stored


@dataclass(frozen=True)
class Context:
    """The prior items a request continues from, and how it named them."""

    items: list[InputItem]
    chained: bool
    """True when named by previous_response_id or conversation: wrong outputs are then the caller's error."""
    turns: tuple[str, ...] = ()
    """A chained request's own turns (its previous response's, its conversation's responses'): the only paused
    turns its outputs may resume."""


async def prior_context(
    services: Services,
    responses: ResponseStore,
    tenant: str,
    body: CreateResponse,
    unstored: Collection[str] = (),
) -> Context:
    """`unstored`: `store: false` responses the caller may still continue from (those a WebSocket made)."""
    if body.previous_response_id is not None:
        chain = await _stored_chain(responses, tenant, body.previous_response_id, unstored)
        return Context(await _chain_items(services, chain), chained=True, turns=(chain[-1].turn_id,))
    if body.conversation_id is not None:
        items = await view.conversation_items(services, tenant, body.conversation_id)
        if items is None:
            raise OpenAIError(404, f"Conversation with id '{body.conversation_id}' not found.", "conversation")
        turns = tuple(dict.fromkeys(record.turn_id for record in await responses.of_conversation(body.conversation_id)))
        return Context(parse_items(items), chained=True, turns=turns)
    return Context([], chained=False)


async def chain_items(
    services: Services, responses: ResponseStore, tenant: str, previous_id: str, unstored: Collection[str] = ()
) -> list[InputItem]:
    return await _chain_items(services, await _stored_chain(responses, tenant, previous_id, unstored))


async def _stored_chain(
    responses: ResponseStore, tenant: str, previous_id: str, unstored: Collection[str] = ()
) -> list[ResponseRecord]:
    """The previous response and its predecessors, oldest first; a 400 when it is not a stored response (or one
    of `unstored`, the `store: false` responses the caller may still continue from)."""
    chain = await responses.chain(tenant, previous_id)
    if not chain or chain[-1].response_id != previous_id or not (chain[-1].store or previous_id in unstored):
        raise invalid(
            f"Previous response with id '{previous_id}' not found.",
            "previous_response_id",
            "previous_response_not_found",
        )
    return chain


async def _chain_items(services: Services, chain: list[ResponseRecord]) -> list[InputItem]:
    outputs = await view.chain_outputs(services, chain)
    status = None if outputs[-1] is not None else (await view.response_object(services, chain[-1]))["status"]
    if status in ("queued", "in_progress"):
        raise invalid(
            f"Previous response '{chain[-1].response_id}' is still {status}; continue from it once it has finished.",
            "previous_response_id",
        )
    items: list[InputItem] = []
    for record, output in zip(chain, outputs, strict=True):
        items += parse_items(compaction_first(record.input_items(), output or []))
    return items


def _seal(services: Services, credentials: dict[str, dict[str, str]]) -> str | None:
    if not credentials:
        return None
    if services.settings.credentials_key is None:
        raise invalid(
            "An mcp tool carries headers or authorization, but this server cannot hold credentials for a response: "
            "its operator has not set DA_CREDENTIALS_KEY. Send the tool without them, or ask for the key.",
            "tools",
        )
    return CredentialSeal(services.settings.credentials_key).seal({}, by_label=credentials)


@dataclass(frozen=True)
class _Creation:
    """One create request as the steps after its checks need it: who asks, for which response, with what."""

    services: Services
    tenant: str
    key_id: str
    """The caller's API key id: who decides the approvals the input answers."""
    response_id: str
    body: CreateResponse
    stored: list[dict[str, Any]]
    """The input items as the response records them (`stored_input`)."""
    credentials: str | None
    """The request's MCP headers, sealed; None without any."""
    keyed: bool
    request_hash: str | None
    steerable: bool = False
    """A steer may cut its model call (TurnStart.cut_steering): a response made over a WebSocket."""


def _record(creation: _Creation, turn_id: str, segment: int) -> ResponseRecord:
    body = creation.body
    request = body.model_dump(mode="json", exclude={"input", "tools", "stream"}, exclude_none=True, by_alias=True) | {
        "input": creation.stored,
        "tools": body.echo_tools(),
    }
    return ResponseRecord(
        response_id=creation.response_id,
        tenant_id=creation.tenant,
        turn_id=turn_id,
        segment_index=segment,
        conversation_id=body.conversation_id,
        previous_response_id=body.previous_response_id,
        model=body.model,
        request=request,
        background=body.background,
        store=body.store,
        created_at=datetime.now(UTC),
        request_hash=creation.request_hash,
    )


@dataclass(frozen=True)
class Created:
    record: ResponseRecord
    after: int
    """The turn's last event id before this response's segment: its events follow it."""
    new_turn: bool = False
    """This request began the turn just now: nothing is written yet (api/streams/event_hub.py, `subscribe`)."""


async def create(
    services: Services,
    tenant: str,
    response_id: str,
    body: CreateResponse,
    context: Context,
    keyed: bool = True,
    request_hash: str | None = None,
    steerable: bool = False,
    *,
    key_id: str,
) -> Created:
    """Resume the turn the input answers, or start a new one; the response is recorded either way. `keyed`: the
    id comes from an Idempotency-Key, so an earlier attempt that crashed may have recorded its turn already.
    `request_hash`: an unkeyed request's, by which the SDK's retries of it find it (`latest_with_request`)."""
    items = resolve_references(body.items(), context.items)
    check_tool_outputs(context.items, items)
    check_approval_timeouts(body, services.settings.approval_timeout)
    opened = open_compactions(services.settings, tenant, [*context.items, *items])
    threshold = compact_threshold(services.settings, body)  # a 400 for compaction no key can seal, early
    credentials = _seal(services, mcp_credentials(body))
    creation = _Creation(
        services, tenant, key_id, response_id, body, stored_input(items), credentials, keyed, request_hash, steerable
    )
    resumed = await _resume_waiting(creation, context, items)
    if resumed is not None:
        return resumed
    await refuse_interleaving(services, body, threshold)  # a new turn only: resuming one does not compact
    return await _start(creation, as_read(context.items + items, opened))


async def resume_only(
    services: Services, tenant: str, response_id: str, body: CreateResponse, context: Context, key_id: str
) -> Created | None:
    """Resume the paused turn the input answers, exactly as `create` would; None, with nothing written or
    started, when no paused turn takes it (a WebSocket's `response.inject` then fails instead of starting one)."""
    items = resolve_references(body.items(), context.items)
    check_tool_outputs(context.items, items)
    check_approval_timeouts(body, services.settings.approval_timeout)
    credentials = _seal(services, mcp_credentials(body))
    creation = _Creation(
        services, tenant, key_id, response_id, body, stored_input(items), credentials, False, None, True
    )
    return await _resume_waiting(creation, context, items)


async def _start(creation: _Creation, everything: list[InputItem]) -> Created:
    services, tenant, response_id, body = creation.services, creation.tenant, creation.response_id, creation.body
    credentials = creation.credentials
    split = split_input(to_messages(everything))
    context = fit_context(split.context, services.settings.max_history_bytes, body.truncation)
    turn_id = turn_id_of(response_id)
    started_at = datetime.now(UTC)
    # A fresh random id has no turn yet; a keyed one may, recorded by a first attempt that crashed.
    new_turn = not creation.keyed or await services.store.turns.turn_status(turn_id) is None
    record = _record(creation, turn_id, 0)
    # The response's row commits with its turn's, unless MCP headers are kept in between: a retry that finds
    # the response recorded (`retried`) starts its workflow without keeping them again.
    with_turn = new_turn and credentials is None
    if new_turn:
        also = partial(add_response, record) if with_turn else None
        await services.store.turns.begin_detached_turn(
            tenant, turn_id, split.input, context, response_id, turn_settings(body), started_at, also=also
        )
    await keep_mcp_headers(services, turn_id, credentials)
    if not with_turn:
        await services.store.responses.add(record)
    await _start_workflow(services, record, body, started_at, creation.steerable)
    return Created(record, 0, new_turn)


async def _start_workflow(
    services: Services, record: ResponseRecord, body: CreateResponse, started_at: datetime, steerable: bool = False
) -> None:
    """Start the turn's workflow unless it was (its id is the turn's: a second start starts nothing)."""
    start = TurnStart(
        turn_id=record.turn_id,
        plan=turn_plan(
            body,
            record.response_id,
            services.settings.max_infer_iters,
            compact_threshold(services.settings, body),
            services.settings.approval_timeout,
        ),
        segment_id=record.response_id,
        started_at=started_at,
        awaiting_input_timeout=services.settings.awaiting_input_timeout,
        continue_as_new_after_events=services.settings.continue_as_new_after_events,
        inference_writes_end=True,
        # A steerable one's steers mark the cut before they reach the workflow: its local call ends at the mark.
        cut_steering=steerable,
        # Only a background response can be cancelled through the API, and GET reads the store, not the workflow.
        local_inference=not body.background,
    )
    conversation = body.conversation_id
    extra = [SearchAttributePair(CONVERSATION_ID, conversation)] if conversation is not None else []
    early = services.early_inference
    if early is not None and (first_call := first_inference(start)) is not None:
        early.begin(first_call)  # the model hears of it while Temporal records the start (docs/design.md)
    try:
        started = await services.turns.start_once(start, record.tenant_id, summary(body), extra_attributes=extra)
    except Exception as error:
        if early is not None:
            early.abandon(record.turn_id)
        log.exception("starting the workflow of response %s failed", record.response_id)
        await services.store.turns.abandon_turn(record.turn_id, "Its workflow could not be started.")
        raise OpenAIError(
            503, "Could not start the response's workflow (Temporal unavailable); retry shortly."
        ) from error
    if not started and early is not None:  # its workflow ran before: its model call is that run's to make
        early.abandon(record.turn_id)


async def retried(services: Services, record: ResponseRecord, body: CreateResponse) -> Created | None:
    """A create retried with its Idempotency-Key finds its response recorded: finish what a crash of the
    first attempt left undone. None when the response's resumption never reached its turn, which still
    waits: the caller creates it again."""
    found = await view.segment(services, record)
    if record.segment_index == 0:
        if not found.bodies and await services.store.turns.turn_status(record.turn_id) == TurnStatus.RUNNING:
            await _start_workflow(services, record, body, record.created_at)
        return Created(record, 0)
    if found.after is not None:
        return Created(record, found.after)
    if await services.store.turns.turn_status(record.turn_id) == TurnStatus.AWAITING_INPUT:
        await services.store.responses.forget(record.response_id)
        return None
    return Created(record, await services.store.turns.last_event_id(record.turn_id))


def _answers(
    creation: _Creation, items: list[InputItem], prior: list[InputItem], waiting: dict[str, str], turn_id: str
) -> tuple[list[ToolResponse], list[ApprovalDecision], list[UserMessage]]:
    """The outputs and decisions (made by the caller, now) for the waiting turn's calls, and the user input after
    the last of them."""
    now = datetime.now(UTC)
    names = {item.call_id: item.name for item in [*prior, *items] if isinstance(item, FunctionCallItem)}
    outputs: list[ToolResponse] = []
    decisions: list[ApprovalDecision] = []
    last = -1
    for index, item in enumerate(items):
        if isinstance(item, FunctionCallOutputItem) and waiting.get(item.call_id) == turn_id:
            outputs.append(
                ToolResponse(call_id=item.call_id, tool_name=names.get(item.call_id, ""), content=item.text())
            )
            last = index
        elif isinstance(item, McpApprovalResponseItem) and waiting.get(item.approval_request_id) == turn_id:
            decisions.append(
                ApprovalDecision(
                    approval_request_id=item.approval_request_id,
                    approve=item.approve,
                    reason=item.reason,
                    decided_by=creation.key_id,
                    tenant=creation.tenant,
                    decided_at=now,
                )
            )
            last = index
    followups = [
        UserMessage(content=item.text())
        for item in items[last + 1 :]
        if isinstance(item, MessageItem) and item.role == "user"
    ]
    return outputs, decisions, followups


async def _resume_waiting(creation: _Creation, context: Context, items: list[InputItem]) -> Created | None:
    """Resume the paused turn these outputs answer; None when no paused turn waits for them."""
    services, tenant, response_id, body = creation.services, creation.tenant, creation.response_id, creation.body
    responses = services.store.responses
    ids = [item.call_id for item in items if isinstance(item, FunctionCallOutputItem)]
    ids += [item.approval_request_id for item in items if isinstance(item, McpApprovalResponseItem)]
    # Only a Responses turn, and for a chained request only its chain's own: an Agents API session's turn (or
    # another chain's) may wait on the same call id, deterministic as some models' call ids are.
    waiting = await responses.waiting_for(tenant, ids, context.turns if context.chained else None)
    if not waiting:
        return None
    turn_ids = list(dict.fromkeys(waiting[i] for i in ids if i in waiting))
    if len(turn_ids) > 1 and context.chained:
        raise invalid("The input answers the calls of more than one response; answer one response at a time.", "input")
    turn_id = turn_ids[-1]
    outputs, decisions, followups = _answers(creation, items, context.items, waiting, turn_id)
    limit = services.settings.max_tool_output_chars
    outputs = [output.model_copy(update={"content": truncate_content(output.content, limit)}) for output in outputs]
    segment = len(await responses.of_turn(turn_id))
    settings = turn_settings(body)
    await services.store.turns.add_turn_settings(turn_id, response_id, settings)
    await keep_mcp_headers(services, turn_id, creation.credentials)
    after = await services.store.turns.last_event_id(turn_id)
    record = _record(creation, turn_id, segment)
    await responses.add(record)
    submission = ToolResponsesSubmission(
        tool_responses=outputs,
        approvals=decisions,
        followup_messages=followups,
        plan=turn_plan(
            body, response_id, services.settings.max_infer_iters, approval_ceiling=services.settings.approval_timeout
        ),
        segment_id=response_id,
        local_inference=not body.background,
    )
    try:
        await services.turns.submit(turn_id, submission)
    except (ResumeRejected, TurnNotRunning) as refused:
        await responses.forget(response_id)
        if isinstance(refused, ResumeRejected) and not refused.conflict and context.chained:
            raise invalid(str(refused), "input") from refused
        # The turn stopped waiting meanwhile (another continuation took it, it expired): a new turn.
        log.info("response %s: turn %s no longer waits (%s); starting a new turn", response_id, turn_id, refused)
        return None
    except TurnUnavailable as unavailable:
        await responses.forget(response_id)
        raise OpenAIError(503, str(unavailable)) from unavailable
    return Created(record, after)
