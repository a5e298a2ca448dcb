"""The console's turns and sessions: lists of the signed-in tenant's responses, conversations, llama-stack sessions
and Agents API sessions (newest first, paged, each with its turn's status), and a turn's page: its steps as a
timeline (turn_timeline.py), the link to its workflow in the Temporal UI, and its live tokens while it runs.

The live tokens are the turn's own event stream (the one every dialect's stream is made from), served here under
/console so the key cookie reaches it; static/console.js reads it with an EventSource. Without script the page
is whole, as of when it was loaded. Tenancy is the API's: another tenant's turn is a 404 like an unknown one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal, cast
from urllib.parse import quote

from fastapi import APIRouter, Header, HTTPException, Query, Request
from fastapi.responses import StreamingResponse
from starlette.responses import Response

from api.console import guard as guard
from api.console.routes import page, templates
from api.console.turn_timeline import FIELD_CHARS, build, clip, content_text
from api.services import Services, ServicesDep
from api.streams.event_stream import is_final, sse_frame, tail_events
from api.turns.stuck import still_running
from store.turn_views import SessionLine, TurnView
from workflows.contracts import turn_workflow_id

router = APIRouter(prefix="/console", include_in_schema=False)

View = Literal["responses", "conversations", "sessions", "agent_sessions"]
VIEWS: dict[str, str] = {
    "responses": "Responses",
    "conversations": "Conversations",
    "sessions": "llama-stack sessions",
    "agent_sessions": "Agents API sessions",
}
PAGE_SIZE = 25
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def _dollars(microcents: int | None) -> str:
    if microcents is None:
        return "n/a"
    return f"${microcents / 100_000_000:.6f}".rstrip("0").rstrip(".") if microcents else "$0"


def _seconds(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.1f} min"


templates.filters["dollars"] = _dollars
templates.filters["seconds"] = _seconds
templates.filters["content_text"] = content_text
templates.filters["clipped"] = lambda text: clip(text, [FIELD_CHARS])


def _line(line_id: str, turn_id: str | None, status: Any, created_at: Any, **extra: Any) -> dict[str, Any]:
    return {
        "id": line_id,
        "turn_id": turn_id,
        "status": str(status) if status else None,
        "created_at": created_at,
        **extra,
    }


async def _lines(services: Services, tenant: str, view: View, after: str | None) -> tuple[list[dict[str, Any]], bool]:
    """One page of the view's lines, newest first, through the same store queries as the API's lists."""
    store = services.store
    if view == "responses":
        responses = await store.responses.page(tenant, after, PAGE_SIZE, "desc")
        statuses = await store.turn_views.statuses([record.turn_id for record in responses.items])
        return [
            _line(r.response_id, r.turn_id, statuses.get(r.turn_id), r.created_at, model=r.model)
            for r in responses.items
        ], responses.has_more
    if view == "agent_sessions":
        sessions, more = await store.agent_sessions.sessions(tenant, after, PAGE_SIZE, "desc")
        latest = await store.turn_views.latest_session_turns([session.session_id for session in sessions])
        statuses = await store.turn_views.statuses(list(latest.values()))
        return [
            _line(
                s.session_id,
                latest.get(s.session_id),
                statuses.get(latest.get(s.session_id, "")),
                s.created_at,
                agent_id=s.agent_id,
            )
            for s in sessions
        ], more
    found = await (store.turn_views.conversations if view == "conversations" else store.turn_views.llama_sessions)(
        tenant, after, PAGE_SIZE
    )

    def shown(line: SessionLine) -> dict[str, Any]:
        return _line(
            line.id, line.latest_turn_id, line.latest_status, line.created_at, name=line.name, agent_id=line.agent_id
        )

    return [shown(line) for line in found.items], found.has_more


@router.get("/turns")
async def turns_list(
    request: Request, services: ServicesDep, view: str = "responses", after: str | None = None
) -> Response:
    principal = guard.signed_in(request)
    if view not in VIEWS:
        return page(request, "refused.html", 400, message=f"view must be one of {', '.join(VIEWS)}, not {view!r}")
    try:
        lines, more = await _lines(services, principal.tenant, cast(View, view), after)
    except LookupError:
        message = f"'after' {after!r} is not an id of this list: follow the list's own 'Older' link."
        return page(request, "refused.html", 400, message=message)
    return page(
        request,
        "turns.html",
        views=VIEWS,
        view=view,
        lines=lines,
        next_after=lines[-1]["id"] if more and lines else None,
        tenant=principal.tenant,
        signed_in=bool(services.settings.key_entries()),
    )


async def _owned_view(services: Services, tenant: str, turn_id: str) -> TurnView:
    view = await services.store.turn_views.turn(tenant, turn_id)
    if view is None:
        raise HTTPException(404, f"No turn {turn_id!r}")
    return view


@router.get("/turns/{turn_id}")
async def turn_page(request: Request, services: ServicesDep, turn_id: str) -> Response:
    principal = guard.signed_in(request)
    view = await services.store.turn_views.turn(principal.tenant, turn_id)
    if view is None:
        return page(request, "refused.html", 404, message=f"This tenant has no turn {turn_id}.")
    settings = services.settings
    namespace = quote(services.turns.client.namespace, safe="")
    workflow = quote(turn_workflow_id(turn_id), safe="")
    return page(
        request,
        "turn.html",
        view=view,
        turn=view.turn,
        timeline=build(view, settings),
        temporal_url=f"{settings.temporal_ui_url.rstrip('/')}/namespaces/{namespace}/workflows/{workflow}",
        live=not view.turn.status.is_final,
        live_after=max((event.event_id for event in view.events if is_final(event.body)), default=0),
        tenant=principal.tenant,
        signed_in=bool(settings.key_entries()),
    )


@router.get("/turns/{turn_id}/events")
async def turn_events(
    request: Request,
    services: ServicesDep,
    turn_id: str,
    after: Annotated[int, Query(ge=0)] = 0,
    last_event_id: Annotated[int | None, Header(ge=0)] = None,
) -> Response:
    """The turn's events after event `after` as SSE, up to its next end or pause: the console page's live view.
    A browser reconnecting sends the last id it saw (`Last-Event-ID`), and goes on from there. Holds one of the
    key's stream slots, as every stream of the API does."""
    principal = guard.signed_in(request)
    after = max(after, last_event_id or 0)
    view = await _owned_view(services, principal.tenant, turn_id)
    if view.turn.status.is_final and view.last_event_id <= after:
        return guard.secured(request, StreamingResponse(iter(()), media_type="text/event-stream"))
    slot = services.streams.take(principal.key_id)

    async def frames() -> AsyncIterator[bytes]:
        async for event in tail_events(services.events, turn_id, after, lambda: still_running(services, turn_id)):
            yield sse_frame(event)

    response = StreamingResponse(frames(), media_type="text/event-stream", headers=SSE_HEADERS)
    return guard.secured(request, slot.hold_for(response))
