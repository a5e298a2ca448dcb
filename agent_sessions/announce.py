"""The webhook events a session's life causes (`agent.session.created`, `agent.session.in_progress`).

A session's creation and a turn's start record theirs in the transaction of their cause (`session_event`, given
to the store's write: the outbox), so an event is never lost nor recorded for a write that failed; their
deliveries are then started at once (`start_deliveries`), and the outbox sweep starts any this misses. A raised
spend limit that lets a held turn go on records its `agent.session.in_progress` in the limit's write
(`SpendStore.set_limit`). A turn working again after a pause records its own in the write that says it runs
(store/webhooks/webhook_store.py); the API, which has the resume first, also records it at once (`announce`)
under the same cause, naming the pause: whichever comes first records it, and the other nothing."""

from __future__ import annotations

import logging

from agent_sessions.services import SessionServices
from domain.webhook_events import agent_session_data
from store.agent_sessions.sessions import SessionEvent
from webhooks.dispatch import DeliveryStarter

log = logging.getLogger(__name__)

WEBHOOK_BATCH = 100


def session_event(event_type: str, session_id: str, cause_id: str, occasion: str | None = None) -> SessionEvent:
    """`event_type` of the session, caused by `cause_id` (the session's or turn's id) on `occasion` (which of the
    turn's resumes, say)."""
    cause = f"{cause_id}:{occasion}:{event_type}" if occasion else f"{cause_id}:{event_type}"
    return SessionEvent(event_type, agent_session_data(event_type, session_id), cause, cause_id)


async def start_deliveries(services: SessionServices, cause_id: str) -> None:
    """Start the deliveries just recorded for `cause_id`; a failure is the outbox sweep's to make good."""
    webhooks = services.store.webhooks
    try:
        starter = DeliveryStarter(services.turns.client, services.settings.task_queue, webhooks)
        await starter.start(await webhooks.unstarted(WEBHOOK_BATCH, cause_id))
    except Exception:
        log.warning("webhook deliveries of %s not started now; the sweep will", cause_id, exc_info=True)


async def announce(
    services: SessionServices,
    tenant: str,
    event_type: str,
    session_id: str,
    cause_id: str,
    occasion: str | None = None,
) -> None:
    """Record `event_type` for the session's webhook endpoints in a transaction of its own and start its
    deliveries, for a cause the store does not write. Never fails the request that caused it."""
    event = session_event(event_type, session_id, cause_id, occasion)
    try:
        recorded = await services.store.webhooks.record(tenant, event.event_type, event.data, event.cause, cause_id)
    except Exception:
        log.warning("webhook %s of session %s not recorded", event_type, session_id, exc_info=True)
        return
    if recorded:
        await start_deliveries(services, cause_id)
