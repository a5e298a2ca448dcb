"""A response as the router shows it: its row plus its segment of the turn's stored events, rendered by
items.py (the Response object) and stream.py (the numbered stream events).

A response is a segment of its turn: the first response's segment begins at the turn's first event, a later
one at the `segment_started` runtime event that names it; each ends at the first final event after its start
(a pause, the turn's end, an error). Everything is read from the store, so every API process shows the same.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from api.openai.responses.compaction_items import compaction_first
from api.openai.responses.items import fold_segment, render_response
from api.openai.responses.stream import ResponseStream
from api.openai.responses.stream_events import KEEPALIVE_FRAME, EventBase, sse_frame
from api.openai.responses.wire import Response
from api.services import Services
from api.streams.event_stream import is_final, tail_events
from api.turns.stuck import still_running
from domain.turns import TurnStatus
from store.responses.conversations import ConversationNotFound, Item
from store.responses.responses import ResponseRecord
from store.turns.records import StoredEvent

_ITEMS_PER_READ = 1000
_ENDED_UNEXPECTEDLY = {"error": {"message": "The response's workflow ended without finishing it (was it terminated?)."}}


def base_response(record: ResponseRecord) -> Response:
    """The response as created: what the request asked for, echoed; status and output are the renderer's."""
    asked = record.request
    return Response(
        id=record.response_id,
        created_at=int(record.created_at.timestamp()),
        status="queued" if record.background else "in_progress",
        background=record.background,
        instructions=asked.get("instructions"),
        max_output_tokens=asked.get("max_output_tokens"),
        max_tool_calls=asked.get("max_tool_calls"),
        model=record.model,
        parallel_tool_calls=asked.get("parallel_tool_calls", True),
        previous_response_id=record.previous_response_id,
        conversation={"id": record.conversation_id} if record.conversation_id else None,
        prompt_cache_key=asked.get("prompt_cache_key"),
        safety_identifier=asked.get("safety_identifier"),
        store=record.store,
        temperature=_sampling(asked, "temperature"),
        text=asked.get("text") or {},
        tool_choice=asked.get("tool_choice", "auto"),
        tools=[_with_strict(tool) for tool in asked.get("tools", [])],
        top_p=_sampling(asked, "top_p"),
        truncation=asked.get("truncation", "disabled"),
        user=asked.get("user"),
        metadata=asked.get("metadata") or {},
    )


SAMPLING_DEFAULTS = {"temperature": 1.0, "top_p": 1.0}
"""What a response echoes for a sampling parameter its request left unset: the OpenAI API's defaults (the
values the schema's clients expect as numbers). presence_penalty and frequency_penalty are not create
parameters; they echo the default 0."""


def _sampling(asked: dict[str, Any], name: str) -> float:
    value = asked.get(name)
    return float(value) if value is not None else SAMPLING_DEFAULTS[name]


def _with_strict(tool: dict[str, Any]) -> dict[str, Any]:
    """A function tool as echoed: with `strict` always (null when the request did not say)."""
    return {**tool, "strict": tool.get("strict")} if tool.get("type") == "function" else tool


@dataclass(frozen=True)
class Segment:
    bodies: list[dict[str, Any]]
    """The segment's events stored so far, its closing one included once written."""
    after: int | None
    """The id of the turn's event before the segment's first; None while a resumed segment has not begun."""


def _starts(body: dict[str, Any], record: ResponseRecord) -> bool:
    runtime = body.get("runtime") or {}
    return runtime.get("kind") == "segment_started" and runtime.get("segment_id") == record.response_id


async def segment(services: Services, record: ResponseRecord) -> Segment:
    return slice_segment(record, await services.store.turns.events_with_key_prefix(record.turn_id, ""))


def slice_segment(record: ResponseRecord, events: list[StoredEvent]) -> Segment:
    """The response's segment among the turn's events (all of them, or those after any point before it)."""
    start = 0
    if record.segment_index > 0:
        start = next((index for index, event in enumerate(events) if _starts(event.body, record)), -1)
        if start < 0:
            return Segment([], None)
    bodies = []
    for event in events[start:]:
        bodies.append(event.body)
        if is_final(event.body):
            break
    return Segment(bodies, events[start - 1].event_id if start > 0 else 0)


async def _turn_status(services: Services, record: ResponseRecord, bodies: list[dict[str, Any]]) -> TurnStatus | None:
    """Only an error event needs it (failed and cancelled turns end alike)."""
    return await services.store.turns.turn_status(record.turn_id) if any("error" in body for body in bodies) else None


async def response_object(
    services: Services, record: ResponseRecord, bodies: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The Response object as it stands (status, output), rendered from the stored events: the segment's
    `bodies` when the caller has just read them (a create that waited for its end), else read here."""
    if bodies is None:
        bodies = (await segment(services, record)).bodies
    status = await _turn_status(services, record, bodies)
    return render_response(base_response(record), record.turn_id, bodies, status).model_dump(mode="json")


async def output_items(services: Services, record: ResponseRecord) -> list[dict[str, Any]] | None:
    """The response's output items once its segment has ended; None while it runs."""
    found = await segment(services, record)
    fold = fold_segment(
        record.response_id, record.turn_id, found.bodies, await _turn_status(services, record, found.bodies)
    )
    return [item.model_dump(mode="json") for item in fold.visible_output] if fold.ended else None


async def chain_outputs(services: Services, chain: list[ResponseRecord]) -> list[list[dict[str, Any]] | None]:
    """output_items of each response of a chain, reading each turn's events once: the responses of a
    function-call loop are segments of one turn, and reading it per response would cost O(chain x turn)."""
    events: dict[str, list[StoredEvent]] = {}
    outputs: list[list[dict[str, Any]] | None] = []
    for record in chain:
        if record.turn_id not in events:
            events[record.turn_id] = await services.store.turns.events_with_key_prefix(record.turn_id, "")
        bodies = slice_segment(record, events[record.turn_id]).bodies
        fold = fold_segment(record.response_id, record.turn_id, bodies, await _turn_status(services, record, bodies))
        outputs.append([item.model_dump(mode="json") for item in fold.visible_output] if fold.ended else None)
    return outputs


async def sse(
    services: Services,
    record: ResponseRecord,
    starting_after: int | None,
    created_after: int | None = None,
    new_turn: bool = False,
) -> AsyncIterator[bytes]:
    """`stream_events` framed as Server-Sent Events, a keep-alive comment for each quiet interval."""
    async for event in stream_events(services, record, starting_after, created_after, new_turn):
        yield KEEPALIVE_FRAME if event is None else sse_frame(event)


async def stream_events(
    services: Services,
    record: ResponseRecord,
    starting_after: int | None,
    created_after: int | None = None,
    new_turn: bool = False,
) -> AsyncIterator[EventBase | None]:
    """The response's stream events after sequence number `starting_after` (all without it), live to its end;
    None for each interval without any (SSE sends a keep-alive, a WebSocket nothing).

    The renderer replays the segment from its first stored event, so every event keeps its number however
    often and wherever the stream is resumed. `created_after`: the turn's last event before the segment, known
    to the create that made the response; the stream then tails from there without looking the segment up.
    `new_turn`: that create began the turn (api/streams/event_hub.py, `subscribe`)."""
    stream = ResponseStream(base_response(record), record.turn_id, starting_after)
    for event in stream.open():
        yield event
    if created_after is not None:
        cursor, begun = created_after, record.segment_index == 0
    else:
        latest = await services.store.turns.last_event_id(record.turn_id)  # before the lookup: nothing is missed
        found = await segment(services, record)
        begun = found.after is not None
        cursor = found.after if found.after is not None else latest
    tail = tail_events(
        services.events,
        record.turn_id,
        cursor,
        lambda: still_running(services, record.turn_id),
        include_runtime=True,
        new_turn=new_turn,
    )
    async for stored in tail:
        if stored is None:
            yield None
            continue
        if not begun:  # a resumed segment: its events begin with its segment_started
            begun = _starts(stored.body, record)
            if not begun:
                continue
        status = await services.store.turns.turn_status(record.turn_id) if "error" in stored.body else None
        for event in stream.feed(stored.body, status):
            yield event
        if stream.finished:
            return
    if not stream.finished:
        for event in stream.feed(_ENDED_UNEXPECTEDLY, await services.store.turns.turn_status(record.turn_id)):
            yield event


async def conversation_items(services: Services, tenant: str, conversation_id: str) -> list[dict[str, Any]] | None:
    """The conversation's items oldest first, finished responses settled into it first; None if unknown."""
    await services.settle_conversation(services, tenant, conversation_id)
    conversations = services.store.conversations
    items: list[dict[str, Any]] = []
    after: str | None = None
    try:
        while True:
            page = await conversations.list_items(tenant, conversation_id, "asc", after, _ITEMS_PER_READ)
            items += page.items
            if not page.has_more or not page.items:
                return items
            after = page.items[-1]["id"]
    except ConversationNotFound:
        return None


async def settle_conversation(services: Services, tenant: str, conversation_id: str) -> None:
    """Append the input and output items of the conversation's finished responses, each response exactly once
    and in creation order (the runtime's `settle_conversation` hook: it runs before a conversation is read).

    The flag and the items are written in one transaction, so two processes settling at once append once. A
    response still running holds back the ones after it: the conversation stays in order."""
    for record in await services.store.responses.of_conversation(conversation_id, unappended_only=True):
        if record.tenant_id != tenant:
            continue
        output = await output_items(services, record)
        if output is None:
            return
        items = [Item(body["id"], body) for body in compaction_first(record.input_items(), output)]
        await services.store.conversations.append_settled(record.response_id, conversation_id, items)
