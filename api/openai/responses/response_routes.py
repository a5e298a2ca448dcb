"""`/v1/responses`: create (streamed or not, background or not), retrieve (or resume its stream), cancel,
delete, list input items, list responses.

A response is a segment of a durable turn (api/openai/responses/create.py). Its state lives in the store — the
`responses` row and the turn's events — so any API process answers for any response, a stream resumes from
any process by sequence number, and a background response runs in Temporal whatever happens to this process.

Client disconnects: a client that goes away from a non-background create (streamed or not) before its
response ends cancels the turn (spec §5.4e: generation stops); a background response is not affected.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Header, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse

from api.containers import ContainersDep
from api.guards.tenancy import Principal, PrincipalDep
from api.knowledge import KnowledgeDep
from api.openai.errors import ERROR_RESPONSES, OpenAIError, invalid, not_found
from api.openai.pages import list_page
from api.openai.responses import view
from api.openai.responses.create import (
    Created,
    create,
    earlier_attempt,
    prior_context,
    request_hash_of,
    response_id_for,
    retried,
)
from api.openai.responses.plan import bind_code_containers, check_mcp_urls, check_vector_stores, require_web_search
from api.openai.responses.request import parse_create, require_known_tool_choice
from api.services import Services, ServicesDep
from api.streams.event_stream import is_final, tail_events
from api.turns.sdk_retries import RETRY_COUNT_HEADER
from api.turns.stuck import still_running
from store.responses.responses import ResponseRecord
from store.turns.records import StoredEvent

log = logging.getLogger(__name__)

router = APIRouter(tags=["responses"], responses=ERROR_RESPONSES)

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
IN_FLIGHT = ("queued", "in_progress")
CANCEL_WAIT_POLLS = 600

_pending_cancels: set[asyncio.Task[None]] = set()
"""Cancellations of abandoned responses under way (a task must be referenced until it is done)."""


async def _stored(services: Services, tenant: str, response_id: str) -> ResponseRecord:
    """The tenant's stored response; 404 for unknown ids, other tenants' and `store: false` responses alike."""
    record = await services.store.responses.get(tenant, response_id)
    if record is None or not record.store:
        raise not_found("Response", response_id)
    return record


def _streamed(
    services: Services,
    principal: Principal,
    events: AsyncIterator[bytes],
    on_close: Callable[[], None] | None = None,
) -> StreamingResponse:
    """SSE holding one of the key's stream slots until it ends; `on_close` runs if it ends early."""
    slot = services.streams.take(principal.key_id)

    async def framed() -> AsyncIterator[bytes]:
        finished = False
        try:
            async for frame in events:
                yield frame
            finished = True
        finally:
            if not finished and on_close is not None:
                on_close()

    response = StreamingResponse(framed(), media_type="text/event-stream", headers=SSE_HEADERS)
    return slot.hold_for(response)


def cancel_abandoned(services: Services, record: ResponseRecord) -> None:
    """The client left a non-background response before its end: stop the turn (in the background: the
    request's own task is being torn down)."""

    async def cancel() -> None:
        try:
            if (await view.response_object(services, record))["status"] in IN_FLIGHT:
                log.info("client left response %s before it ended: cancelling its turn", record.response_id)
                await services.turns.cancel(record.turn_id)
        except Exception:  # a best effort: the turn is still durable and can be cancelled later
            log.exception("cancelling the turn of abandoned response %s failed", record.response_id)

    task = asyncio.get_running_loop().create_task(cancel())
    _pending_cancels.add(task)
    task.add_done_callback(_pending_cancels.discard)


async def _wait_for_end(services: Services, request: Request, created: Created) -> list[dict[str, Any]] | None:
    """Wait until the response's segment ends (its turn completes, pauses or fails): its events, as read while
    waiting. None when DA_RESPONSE_WAIT passes, the client leaves (then the turn is cancelled) or the tail ended
    without a final event (the workflow is gone): the caller reads the store instead."""
    record = created.record
    loop = asyncio.get_running_loop()
    deadline = loop.time() + services.settings.response_wait
    events = tail_events(
        services.events,
        record.turn_id,
        created.after,
        lambda: still_running(services, record.turn_id),
        include_runtime=True,
        new_turn=created.new_turn,
    )
    waiting = loop.create_task(_collect(events))
    try:
        while not waiting.done():
            await asyncio.wait({waiting}, timeout=1.0)
            if waiting.done():
                break
            if await request.is_disconnected():
                cancel_abandoned(services, record)
                return None
            if loop.time() >= deadline:
                return None
        found = view.slice_segment(record, waiting.result())
        return found.bodies if found.bodies and is_final(found.bodies[-1]) else None
    finally:
        waiting.cancel()


async def _collect(events: AsyncIterator[StoredEvent | None]) -> list[StoredEvent]:
    return [event async for event in events if event is not None]


def require_configured_model(services: Services, model: str) -> None:
    if services.settings.model(model) is None:
        known = ", ".join(sorted(services.settings.models))
        raise invalid(
            f"The model '{model}' is not configured on this server; configured: {known}.", "model", "model_not_found"
        )


@router.post("/responses")
async def create_response(
    request: Request,
    raw: Annotated[dict[str, Any], Body(description="The create parameters of the OpenAI Responses API")],
    services: ServicesDep,
    principal: PrincipalDep,
    knowledge: KnowledgeDep,
    containers: ContainersDep,
    idempotency_key: Annotated[str | None, Header(max_length=200)] = None,
    retry_count: Annotated[str | None, Header(alias=RETRY_COUNT_HEADER, max_length=20)] = None,
) -> Any:
    """Create a response. With an Idempotency-Key, a retried request answers with the same response and
    starts nothing new; so does the SDK's own retry of a request without one (`earlier_attempt`)."""
    body = parse_create(raw)
    require_known_tool_choice(body)
    require_web_search(body, services.tools.web_search is not None)
    require_configured_model(services, body.model)
    tenant = principal.tenant
    response_id = response_id_for(tenant, idempotency_key)
    responses = services.store.responses
    request_hash = None
    if idempotency_key is not None:
        existing = await responses.get(tenant, response_id)
    else:
        request_hash = request_hash_of(tenant, await request.body())
        existing = await earlier_attempt(services, responses, tenant, request_hash, retry_count)
    if existing is not None and (again := await retried(services, existing, body)) is not None:
        return await _answer(services, principal, request, again, body.stream)
    await check_mcp_urls(body, services.tools.outbound_policy)
    await check_vector_stores(body, tenant, knowledge)
    await bind_code_containers(body, tenant, containers)
    context = await prior_context(services, responses, tenant, body)
    if body.stream:
        slot_check = services.streams.take(principal.key_id)  # refuse (429) before anything starts
        slot_check.release()
    created = await create(
        services,
        tenant,
        response_id,
        body,
        context,
        keyed=idempotency_key is not None,
        request_hash=request_hash,
        key_id=principal.key_id,
    )
    return await _answer(services, principal, request, created, body.stream)


async def _answer(services: Services, principal: Principal, request: Request, created: Created, stream: bool) -> Any:
    record = created.record
    if stream:
        on_close = None if record.background else (lambda: cancel_abandoned(services, record))
        stream_events = view.sse(services, record, None, created.after, created.new_turn)
        return _streamed(services, principal, stream_events, on_close)
    ended = None if record.background else await _wait_for_end(services, request, created)
    return JSONResponse(await view.response_object(services, record, ended))


@router.get("/responses/{response_id}")
async def retrieve_response(
    response_id: str,
    services: ServicesDep,
    principal: PrincipalDep,
    stream: bool = False,
    starting_after: Annotated[int | None, Query(ge=-1)] = None,
    include: Annotated[list[str] | None, Query(alias="include[]")] = None,
    include_plain: Annotated[list[str] | None, Query(alias="include")] = None,
    include_obfuscation: bool | None = None,
) -> Any:
    """The response; with `stream=true`, its events as SSE from after `starting_after` (all of them from
    `response.created` without it), then live until its end — from any API process."""
    record = await _stored(services, principal.tenant, response_id)
    if stream:
        return _streamed(services, principal, view.sse(services, record, starting_after))
    return JSONResponse(await view.response_object(services, record))


@router.post("/responses/{response_id}/cancel")
async def cancel_response(response_id: str, services: ServicesDep, principal: PrincipalDep) -> Any:
    """Cancel a background response that is queued or in progress (spec §7): its turn's workflow is
    cancelled and the response ends `cancelled` with no output. Cancelling it again answers the same."""
    record = await _stored(services, principal.tenant, response_id)
    if not record.background:
        raise invalid("Cannot cancel a synchronous response.")
    current = await view.response_object(services, record)
    status = current["status"]
    if status == "cancelled":
        return JSONResponse(current)
    if status not in IN_FLIGHT:
        article = "an" if status[0] in "aeiou" else "a"
        raise invalid(f"Cannot cancel {article} {status} response.")
    await services.turns.cancel(record.turn_id)
    for _ in range(CANCEL_WAIT_POLLS):
        current = await view.response_object(services, record)
        if current["status"] not in IN_FLIGHT:
            return JSONResponse(current)
        await asyncio.sleep(0.05)
    raise OpenAIError(
        503, f"Response {response_id} was asked to cancel but has not stopped yet; read it again shortly."
    )


@router.delete("/responses/{response_id}")
async def delete_response(response_id: str, services: ServicesDep, principal: PrincipalDep) -> Any:
    record = await _stored(services, principal.tenant, response_id)
    if (await view.response_object(services, record))["status"] in IN_FLIGHT:
        raise invalid("Cannot delete an in-flight response.")
    await services.store.responses.delete(principal.tenant, response_id)
    return {"id": response_id, "object": "response", "deleted": True}


def _page(items: list[dict[str, Any]], limit: int, has_more: bool) -> dict[str, Any]:
    return list_page(items[:limit], has_more)


@router.get("/responses/{response_id}/input_items")
async def list_input_items(
    response_id: str,
    services: ServicesDep,
    principal: PrincipalDep,
    after: str | None = None,
    before: str | None = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    order: Literal["asc", "desc"] = "desc",
    include: Annotated[list[str] | None, Query(alias="include[]")] = None,
    include_plain: Annotated[list[str] | None, Query(alias="include")] = None,
) -> Any:
    """This response's own input items (a string input is one user message), each with its id."""
    record = await _stored(services, principal.tenant, response_id)
    items = record.input_items()
    if order == "desc":
        items = items[::-1]
    ids = [item["id"] for item in items]
    for cursor, param in ((after, "after"), (before, "before")):
        if cursor is not None and cursor not in ids:
            raise invalid(f"No input item with id '{cursor}' in response {response_id}.", param)
    if before is not None:
        items = items[: ids.index(before)]
    if after is not None:
        items = items[ids.index(after) + 1 :]
    return _page(items, limit, len(items) > limit)


@router.get("/responses")
async def list_responses(
    services: ServicesDep,
    principal: PrincipalDep,
    after: str | None = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
    model: str | None = None,
    order: Literal["asc", "desc"] = "desc",
) -> Any:
    """The tenant's stored responses, newest first by default (llama-stack-client's `responses.list`)."""
    try:
        page = await services.store.responses.page(principal.tenant, after or None, limit, order, model)
    except LookupError:
        # 404 like an unknown item cursor of a conversation: the id names nothing of this caller's.
        raise OpenAIError(
            404, f"Response with id '{after}' not found; `after` takes the id of a listed response.", "after"
        ) from None
    objects = [await view.response_object(services, record) for record in page.items]
    return _page(objects, limit, page.has_more)
