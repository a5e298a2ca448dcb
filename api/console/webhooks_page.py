"""The console's webhooks and automations page: the tenant's webhook endpoints with their latest deliveries
(status, attempts, a Redeliver button), and its automations with their next run and Pause / Resume buttons.

Reads and actions go through the API as the visitor (api_calls.py): `GET /v1/webhook_endpoints` and each
one's `/deliveries`, `POST …/deliveries/{id}/redeliver`, `GET /v1/agents/automations` and
`POST /v1/agents/automations/{id}/pause|resume`. The next run is the one Temporal's Schedule of the automation
has planned (docs/agents-spend-and-automations.md): what the API does not say, read from the Schedule itself.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Request
from starlette.responses import Response
from temporalio.service import RPCError

from api.console import guard as guard
from api.console.api_calls import ApiRefused, call_api
from api.console.knowledge_page import ID_PATTERN
from api.console.routes import page
from api.services import ServicesDep
from workflows.automation_run import schedule_id

log = logging.getLogger(__name__)
router = APIRouter(prefix="/console", include_in_schema=False)

SHOWN_DELIVERIES = 10
"""Each endpoint's newest deliveries on the page."""
AGENTS_BETA = {"openai-beta": "agents=v1"}
Id = Annotated[str, Path(pattern=ID_PATTERN)]


async def _next_run(services: Any, automation: dict[str, Any]) -> datetime | None:
    """When the automation's Schedule runs next; None when paused, completed or not known to Temporal."""
    if automation["status"] != "active":
        return None
    try:
        described = await services.turns.client.get_schedule_handle(schedule_id(automation["id"])).describe()
    except RPCError as error:
        log.warning("the Schedule of automation %s could not be read: %s", automation["id"], error.message)
        return None
    upcoming = described.info.next_action_times
    return upcoming[0] if upcoming else None


async def _deliveries(request: Request, services: Any, endpoint: dict[str, Any]) -> list[Any]:
    path = f"/v1/webhook_endpoints/{endpoint['id']}/deliveries"
    found = await call_api(request, services, "GET", path, params={"limit": SHOWN_DELIVERIES})
    return list(found["data"])


async def _page(
    request: Request, services: Any, status_code: int = 200, notice: str | None = None, error: str | None = None
) -> Response:
    principal = guard.signed_in(request)
    endpoints = (await call_api(request, services, "GET", "/v1/webhook_endpoints", params={"limit": 100}))["data"]
    deliveries = await asyncio.gather(*(_deliveries(request, services, endpoint) for endpoint in endpoints))
    automations = (
        await call_api(
            request, services, "GET", "/v1/agents/automations", AGENTS_BETA, params={"limit": 100, "order": "desc"}
        )
    )["data"]
    next_runs = await asyncio.gather(*(_next_run(services, automation) for automation in automations))
    return page(
        request,
        "webhooks.html",
        status_code,
        endpoints=list(zip(endpoints, deliveries, strict=True)),
        automations=list(zip(automations, next_runs, strict=True)),
        notice=notice,
        error=error,
        tenant=principal.tenant,
        signed_in=bool(services.settings.key_entries()),
    )


@router.get("/webhooks")
async def webhooks(request: Request, services: ServicesDep) -> Response:
    return await _page(request, services)


async def _acted(
    request: Request, services: Any, path: str, done: str, headers: dict[str, str] | None = None
) -> Response:
    """Send the action after its form's CSRF check, and show the page again with what became of it."""
    guard.signed_in(request)
    guard.check_csrf(request, await request.form())
    try:
        await call_api(request, services, "POST", path, headers)
    except ApiRefused as refused:
        return await _page(request, services, refused.status, error=f"Not done: {refused.message}")
    return await _page(request, services, notice=done)


@router.post("/webhooks/{endpoint_id}/deliveries/{delivery_id}/redeliver")
async def redeliver(request: Request, services: ServicesDep, endpoint_id: Id, delivery_id: Id) -> Response:
    path = f"/v1/webhook_endpoints/{endpoint_id}/deliveries/{delivery_id}/redeliver"
    return await _acted(request, services, path, f"Delivery {delivery_id} is being sent again.")


@router.post("/automations/{automation_id}/{change}")
async def pause_or_resume(
    request: Request, services: ServicesDep, automation_id: Id, change: Literal["pause", "resume"]
) -> Response:
    done = f"Automation {automation_id} is {'paused' if change == 'pause' else 'active again'}."
    return await _acted(request, services, f"/v1/agents/automations/{automation_id}/{change}", done, AGENTS_BETA)
