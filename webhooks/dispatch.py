"""Starting delivery workflows for the deliveries the store's outbox holds.

The process that records an event starts its deliveries' workflows right after the commit; if it dies
first, the sweep (each API process at start and then periodically) starts them. Both may start the
same round: Temporal refuses the second start of a workflow id, so a delivery runs once.

The sweep also finds a pending round whose workflow ended without recording an outcome (an operator
terminated or cancelled it, or it timed out) and marks it failed with the reason, so it can be redelivered
and its event pruned, instead of staying pending forever. A row the sweep cannot handle is logged and
skipped: it never stops the rows after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from temporalio import activity
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from store.webhooks.webhook_store import DeliveryToStart, WebhookStore
from workflows.webhook_delivery import WEBHOOK_DELIVERY_WORKFLOW, DeliveryStart, delivery_workflow_id

log = logging.getLogger(__name__)

SWEEP_BATCH = 200
ENDED_CHECKS = 200
"""Pending rounds whose workflow the sweep looks up per run; it goes on from there at the next run."""
_kicks: set[asyncio.Task[None]] = set()


class DeliveryStarter:
    def __init__(self, client: Client, task_queue: str, store: WebhookStore) -> None:
        self._client = client
        self._task_queue = task_queue
        self._store = store
        self._checked_up_to: str | None = None

    async def start(self, deliveries: list[DeliveryToStart]) -> None:
        for delivery in deliveries:
            with contextlib.suppress(WorkflowAlreadyStartedError):  # started before: it runs once
                await self._client.start_workflow(
                    WEBHOOK_DELIVERY_WORKFLOW,
                    DeliveryStart(delivery_id=delivery.delivery_id, round=delivery.round),
                    id=delivery_workflow_id(delivery.endpoint_id, delivery.event_id, delivery.round),
                    task_queue=self._task_queue,
                    id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                    memo={
                        "delivery_id": delivery.delivery_id,
                        "endpoint_id": delivery.endpoint_id,
                        "event_id": delivery.event_id,
                        "event_type": delivery.event_type,
                    },
                    static_summary=f"webhook {delivery.event_type} → {delivery.endpoint_id}",
                )
            await self._store.mark_started(delivery.delivery_id, delivery.round)

    async def sweep(self) -> int:
        """Start every delivery round that may not have been started, and fail the next pending rounds whose
        workflow ended without an outcome; how many were started."""
        started = 0
        skipped: set[str] = set()
        while batch := [row for row in await self._store.unstarted(SWEEP_BATCH) if row.delivery_id not in skipped]:
            for delivery in batch:
                try:
                    await self.start([delivery])
                    started += 1
                except Exception:
                    skipped.add(delivery.delivery_id)
                    log.warning("webhook delivery %s not started; next sweep", delivery.delivery_id, exc_info=True)
            if len(batch) < SWEEP_BATCH:
                break
        await self.fail_ended()
        return started

    async def fail_ended(self) -> int:
        """Mark failed each of the next `ENDED_CHECKS` pending rounds whose workflow ended (or Temporal no
        longer knows) without recording an outcome; how many. Pages on from where the last run stopped."""
        failed = 0
        batch = await self._store.started_pending(self._checked_up_to, ENDED_CHECKS)
        self._checked_up_to = batch[-1].delivery_id if len(batch) == ENDED_CHECKS else None
        for delivery in batch:
            try:
                ended = await self._ended(delivery)
                reason = f"The delivery's workflow ended ({ended}) before the receiver accepted it; redeliver it."
                if ended is not None and await self._store.fail_ended(delivery.delivery_id, delivery.round, reason):
                    log.warning("webhook delivery %s failed: its workflow %s", delivery.delivery_id, ended)
                    failed += 1
            except Exception:
                log.warning("webhook delivery %s not checked; next sweep", delivery.delivery_id, exc_info=True)
        return failed

    async def _ended(self, delivery: DeliveryToStart) -> str | None:
        """How the round's workflow ended ("terminated", "canceled", …, "gone" if Temporal no longer has it);
        None while it runs."""
        workflow_id = delivery_workflow_id(delivery.endpoint_id, delivery.event_id, delivery.round)
        try:
            status = (await self._client.get_workflow_handle(workflow_id).describe()).status
        except RPCError as failed:
            if failed.status == RPCStatusCode.NOT_FOUND:
                return "gone"
            raise
        if status is None or status == WorkflowExecutionStatus.RUNNING:
            return None
        return status.name.lower()

    async def stop(self, deliveries: list[DeliveryToStart]) -> None:
        """Cancel the workflows of these deliveries (their endpoint is gone); best effort, as an attempt
        that runs anyway finds nothing to send."""
        for delivery in deliveries:
            workflow_id = delivery_workflow_id(delivery.endpoint_id, delivery.event_id, delivery.round)
            try:
                await self._client.get_workflow_handle(workflow_id).cancel()
            except Exception as failed:  # not started, or already ended
                log.debug("webhook delivery %s not cancelled: %s", workflow_id, failed)


async def sweep_forever(starter: DeliveryStarter, interval: float) -> None:
    """Start what the outbox holds unstarted; at once, then every `interval` seconds. (Old events and their
    delivery log are the retention sweep's: the kind `webhook_deliveries`, docs/retention.md.)"""
    while True:
        try:
            if started := await starter.sweep():
                log.info("started %d webhook deliveries the outbox held", started)
        except Exception:
            log.exception("webhook delivery sweep failed; trying again in %.0f s", interval)
        await asyncio.sleep(interval)


def start_turn_deliveries(store: WebhookStore, turn_id: str) -> None:
    """From the activity that just committed a turn's end or pause: start the workflows of the deliveries
    it recorded, in the background (the turn does not wait; the sweep covers a failure)."""

    async def kick() -> None:
        try:
            await DeliveryStarter(client, task_queue, store).start(await store.unstarted(SWEEP_BATCH, turn_id))
        except Exception:
            log.warning("webhook deliveries of turn %s not started now; the sweep will", turn_id, exc_info=True)

    if not activity.in_activity():
        return
    client, task_queue = activity.client(), activity.info().task_queue
    task = asyncio.create_task(kick())
    _kicks.add(task)
    task.add_done_callback(_kicks.discard)
