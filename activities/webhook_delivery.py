"""One attempt of a webhook delivery: read the endpoint and event from the store, sign, send, log it."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

from temporalio import activity

from activities.heartbeat import heartbeating
from outbound.http import Outbound
from store.webhooks.webhook_store import DELIVERED, FAILED, PENDING, Attempt, WebhookStore
from webhooks import metrics
from webhooks.secrets import NO_KEY, SecretSeal, SecretUnreadable
from webhooks.sender import Sent, send
from webhooks.signing import signed_headers
from workflows.webhook_delivery import WEBHOOK_ATTEMPT_ACTIVITY, AttemptOutcome, AttemptRequest


class WebhookDeliveryActivities:
    def __init__(
        self,
        store: WebhookStore,
        outbound: Outbound,
        seal: SecretSeal | None,
        retry_delays: tuple[float, ...],
        deadline: float,
    ) -> None:
        self._store = store
        self._outbound = outbound
        self._seal = seal
        self._retry_delays = retry_delays
        self._deadline = deadline

    @activity.defn(name=WEBHOOK_ATTEMPT_ACTIVITY)
    async def attempt(self, request: AttemptRequest) -> AttemptOutcome:
        target = await self._store.attempt_target(request.delivery_id, request.round)
        if target is None:
            return AttemptOutcome(status="stopped")
        attempted_at = datetime.now(UTC)
        try:
            if self._seal is None:
                raise SecretUnreadable(NO_KEY)
            secrets = [self._seal.open(sealed) for sealed in target.sealed_secrets]
        except SecretUnreadable as unreadable:
            sent = Sent(None, str(unreadable), 0)
        else:
            body = json.dumps(target.body, separators=(",", ":")).encode()
            # The same webhook-id on every attempt (receivers dedupe on it), a fresh timestamp and signature.
            headers = signed_headers(secrets, target.event_id, int(time.time()), body)
            headers["user-agent"] = "durable-agents-webhooks"
            async with heartbeating():
                sent = await send(self._outbound, target.url, headers, body, self._deadline)
        retry_in = None if sent.accepted else self._delay_after(request.attempt)
        status = DELIVERED if sent.accepted else PENDING if retry_in is not None else FAILED
        attempt = Attempt(attempted_at, sent.status_code, sent.error, sent.duration_ms)
        await self._store.record_attempt(request.delivery_id, request.round, attempt, status)
        if status == DELIVERED:
            metrics.DELIVERIES_SENT.labels(target.event_type).inc()
            return AttemptOutcome(status="delivered")
        if status == FAILED:
            metrics.DELIVERIES_FAILED.labels(target.event_type).inc()
            return AttemptOutcome(status="failed")
        metrics.DELIVERY_RETRIES.labels(target.event_type).inc()
        return AttemptOutcome(status="retrying", retry_in_seconds=retry_in)

    def _delay_after(self, attempt: int) -> float | None:
        """The wait before attempt `attempt + 1`; None when `attempt` was the schedule's last."""
        return self._retry_delays[attempt - 1] if attempt <= len(self._retry_delays) else None
