"""One webhook delivery: attempts on a backoff schedule until the receiver accepts it or the schedule ends.

Each attempt is an activity (activities/webhook_delivery.py) that reads the endpoint and its secret from
the store, signs afresh and sends; it answers how long to wait before the next attempt, so the schedule
(DA_WEBHOOK_RETRY_DELAYS) is the workers' setting, not frozen into a started workflow. The workflow id
names the endpoint and the event, so an operator finds a delivery in the Temporal UI by either, and a
second start of the same round is refused by Temporal: starting is idempotent.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel
from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from workflows.contracts import TOOL_HEARTBEAT_TIMEOUT

WEBHOOK_DELIVERY_WORKFLOW = "WebhookDelivery"
WEBHOOK_ATTEMPT_ACTIVITY = "attempt_webhook_delivery"
WEBHOOK_WORKFLOW_PREFIX = "webhook-"


def delivery_workflow_id(endpoint_id: str, event_id: str, round_: int) -> str:
    """`webhook-<endpoint>-<event>`, and `-redelivery-<n>` for the n-th redelivery."""
    base = f"{WEBHOOK_WORKFLOW_PREFIX}{endpoint_id}-{event_id}"
    return f"{base}-redelivery-{round_}" if round_ else base


class DeliveryStart(BaseModel):
    """Ids only: the event, the endpoint's URL and its secret are read from the store by each attempt."""

    delivery_id: str
    round: int = 0


class AttemptRequest(BaseModel):
    delivery_id: str
    round: int
    attempt: int
    """1 for the first attempt of the round."""


class AttemptOutcome(BaseModel):
    status: str
    """delivered, retrying, failed (the schedule is used up) or stopped (the endpoint or delivery is gone)."""
    retry_in_seconds: float | None = None


_STORE_TROUBLE = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(minutes=1))
"""An attempt that raised (the store unreachable, the worker gone) is tried again; what the receiver
answers is an outcome, never an exception."""


@workflow.defn(name=WEBHOOK_DELIVERY_WORKFLOW)
class WebhookDeliveryWorkflow:
    @workflow.run
    async def run(self, start: DeliveryStart) -> str:
        attempt = 1
        while True:
            outcome: AttemptOutcome = await workflow.execute_activity(
                WEBHOOK_ATTEMPT_ACTIVITY,
                AttemptRequest(delivery_id=start.delivery_id, round=start.round, attempt=attempt),
                result_type=AttemptOutcome,
                start_to_close_timeout=timedelta(minutes=6),  # DA_WEBHOOK_TIMEOUT is at most 5
                heartbeat_timeout=TOOL_HEARTBEAT_TIMEOUT,  # a worker killed mid-attempt: tried again in seconds
                retry_policy=_STORE_TROUBLE,
                summary=f"attempt {attempt}",
            )
            if outcome.retry_in_seconds is None:
                return outcome.status
            await workflow.sleep(timedelta(seconds=outcome.retry_in_seconds), summary="until the next attempt")
            attempt += 1
