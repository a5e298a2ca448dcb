"""`GET /metrics`: Prometheus text exposition of this process's metrics, plus the paused turns now.

Served without authentication, as Prometheus scrapers expect: it holds aggregate counts only, no
ids and no text (see observability/metrics.py). Keep it off the public network at the ingress if
even counts are not for everyone.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, Gauge, generate_latest

from api.services import ServicesDep
from domain.turns import TurnStatus
from webhooks.metrics import oldest_pending_exposition

router = APIRouter(tags=["metrics"])

log = logging.getLogger(__name__)


def _awaiting_input(count: int) -> bytes:
    registry = CollectorRegistry()
    gauge = Gauge(
        "durable_agents_turns_awaiting_input",
        "Turns paused for client tool results now, across all processes (counted in the store)",
        registry=registry,
    )
    gauge.set(count)
    return generate_latest(registry)


@router.get("/metrics", include_in_schema=False)
async def metrics(services: ServicesDep) -> Response:
    body = generate_latest(REGISTRY)
    try:
        body += _awaiting_input(await services.store.turns.count_turns(TurnStatus.AWAITING_INPUT))
    except Exception:  # the scrape still reports the rest; the gauge's absence says the store did not answer
        log.exception("metrics: the store did not answer the count of paused turns")
    try:
        oldest = await services.store.webhooks.oldest_pending()
        body += oldest_pending_exposition((datetime.now(UTC) - oldest).total_seconds() if oldest else 0.0)
    except Exception:
        log.exception("metrics: the store did not answer the age of the oldest pending webhook delivery")
    return Response(body, media_type=CONTENT_TYPE_LATEST)
