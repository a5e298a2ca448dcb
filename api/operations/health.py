"""Liveness (`GET /v1/health`) and readiness (`GET /readyz`, the Kubernetes convention).

Liveness answers without touching anything: a process whose Temporal or store is down is not
broken, and restarting it would not help. Readiness says whether both answer, naming the one that
does not, and whether the event hub is feeding streams. Neither body carries an exception's text:
what went wrong is logged, for the operator.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from api.services import ServicesDep
from domain.content import WireModel

router = APIRouter(tags=["health"])
readiness_router = APIRouter(tags=["health"])

log = logging.getLogger(__name__)

CHECK_TIMEOUT_SECONDS = 2.0


class HealthResponse(WireModel):
    status: str


@router.get("/health", response_model=HealthResponse)
async def health() -> HealthResponse:
    return HealthResponse(status="OK")


async def _answers(name: str, check: Callable[[], Awaitable[object]]) -> bool:
    try:
        await asyncio.wait_for(check(), CHECK_TIMEOUT_SECONDS)
    except Exception:
        log.exception("readiness: %s does not answer", name)
        return False
    return True


@readiness_router.get("/readyz", include_in_schema=False)
async def readiness(services: ServicesDep) -> JSONResponse:
    store, temporal = await asyncio.gather(
        _answers("the store", services.store.ping), _answers("Temporal", services.turns.check_connection)
    )
    streams_problem = services.events.problem()
    if streams_problem is not None:
        log.warning("readiness: %s", streams_problem)
    streams = streams_problem is None
    checks = {
        "store": "ok" if store else "unavailable",
        "temporal": "ok" if temporal else "unavailable",
        "streams": "ok" if streams else "unavailable",
    }
    if store and temporal and streams:
        return JSONResponse({"status": "ready", "checks": checks})
    down = [name for name, ok in (("the store", store), ("Temporal", temporal)) if not ok]
    detail = f"Not ready: {' and '.join(down)} does not answer." if down else "Not ready:"
    if not streams:
        detail += " Event streams are not being fed (the event hub cannot read the store)."
    return JSONResponse(
        {"status": "not ready", "checks": checks, "detail": f"{detail} Retry later."},
        status_code=503,
    )
