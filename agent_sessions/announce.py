"""The webhook events a session's life causes (`agent.session.created`, `agent.session.in_progress`), recorded for
the tenant's endpoints and their deliveries started at once."""

from __future__ import annotations

import logging

from agent_sessions.services import SessionServices
from domain.webhook_events import agent_session_data
from webhooks.dispatch import DeliveryStarter

log = logging.getLogger(__name__)

WEBHOOK_BATCH = 100


async def announce(
    services: SessionServices,
    tenant: str,
    event_type: str,
    session_id: str,
    cause_id: str,
    occasion: str | None = None,
) -> None:
    """Record `event_type` for the session's webhook endpoints and start its deliveries (the outbox sweep
    starts any this misses). `cause_id` (the session's or turn's id) and `occasion` (which of the turn's
    resumes, say) make a repeat record nothing. Never fails the request that caused it."""
    data = agent_session_data(event_type, session_id)
    cause = f"{cause_id}:{occasion}:{event_type}" if occasion else f"{cause_id}:{event_type}"
    try:
        webhooks = services.store.webhooks
        if await webhooks.record(tenant, event_type, data, cause, cause_id):
            starter = DeliveryStarter(services.turns.client, services.settings.task_queue, webhooks)
            await starter.start(await webhooks.unstarted(WEBHOOK_BATCH, cause_id))
    except Exception:
        log.warning("webhook %s of session %s not recorded or started now", event_type, session_id, exc_info=True)
