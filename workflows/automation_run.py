"""`AutomationRun`: one delivery of an Agents API automation — a new session with its input, or input to an
existing session. Its Temporal Schedule starts one per occurrence; a manual invocation starts one directly.

The run itself only names the occurrence: the delivery activity records the invocation under a run key (the
occurrence's scheduled time, or the manual invocation's id) and creates or feeds the session idempotently by
that key, so a retried activity, a worker crash or a duplicate start never delivers one occurrence twice.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributeKey
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel

    from workflows.contracts import TOOL_HEARTBEAT_TIMEOUT

DELIVER_AUTOMATION_ACTIVITY = "deliver_automation"
FAIL_AUTOMATION_ACTIVITY = "fail_automation_invocation"
AUTOMATION_SCHEDULE_PREFIX = "automation-"
AUTOMATION_RUN_PREFIX = "automation-run-"
SCHEDULED_START_TIME = SearchAttributeKey.for_datetime("TemporalScheduledStartTime")
"""Set by Temporal on every workflow a Schedule starts: the occurrence's nominal time."""
DELIVERY_DEADLINE = timedelta(hours=1)
"""How long a delivery is retried (the store or Temporal unavailable) before its invocation is `failed`."""


def schedule_id(automation_id: str) -> str:
    return AUTOMATION_SCHEDULE_PREFIX + automation_id


def run_workflow_id(automation_id: str) -> str:
    """The id of the Schedule's runs (Temporal appends each occurrence's time) and the prefix of manual ones."""
    return AUTOMATION_RUN_PREFIX + automation_id


def scheduled_run_key(scheduled_at: datetime) -> str:
    return "scheduled:" + scheduled_at.isoformat()


def manual_run_key(invocation_id: str) -> str:
    return "manual:" + invocation_id


def invocation_id_for(automation_id: str, run_key: str) -> str:
    """A scheduled occurrence's invocation id, the same in every attempt."""
    return "ainv_" + hashlib.sha256(f"{automation_id}\0{run_key}".encode()).hexdigest()[:32]


class AutomationRunInput(BaseModel):
    automation_id: str
    invocation_id: str | None = None
    """A manual invocation: the row the API recorded (queued). None: a scheduled occurrence."""


class AutomationDelivery(BaseModel):
    automation_id: str
    invocation_id: str
    run_key: str
    scheduled_at: datetime | None = None
    """None for a manual invocation."""


class AutomationDelivered(BaseModel):
    status: str
    """The invocation's status (`completed`, `failed`, `skipped`), or `gone` when the automation was deleted."""
    session_id: str | None = None


class AutomationFailure(BaseModel):
    invocation_id: str
    message: str


@workflow.defn(name="AutomationRun")
class AutomationRun:
    @workflow.run
    async def run(self, start: AutomationRunInput) -> AutomationDelivered:
        if start.invocation_id is not None:
            delivery = AutomationDelivery(
                automation_id=start.automation_id,
                invocation_id=start.invocation_id,
                run_key=manual_run_key(start.invocation_id),
            )
        else:
            scheduled_at = workflow.info().typed_search_attributes.get(SCHEDULED_START_TIME) or workflow.now()
            key = scheduled_run_key(scheduled_at)
            delivery = AutomationDelivery(
                automation_id=start.automation_id,
                invocation_id=invocation_id_for(start.automation_id, key),
                run_key=key,
                scheduled_at=scheduled_at,
            )
        try:
            delivered: AutomationDelivered = await workflow.execute_activity(
                DELIVER_AUTOMATION_ACTIVITY,
                delivery,
                result_type=AutomationDelivered,
                summary=f"automation · deliver {delivery.run_key}",
                start_to_close_timeout=timedelta(minutes=2),
                heartbeat_timeout=TOOL_HEARTBEAT_TIMEOUT,
                schedule_to_close_timeout=DELIVERY_DEADLINE,
                retry_policy=RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=30)),
            )
            return delivered
        except ActivityError as error:
            message = str(error.cause or error)
            await workflow.execute_activity(
                FAIL_AUTOMATION_ACTIVITY,
                AutomationFailure(invocation_id=delivery.invocation_id, message=message),
                start_to_close_timeout=timedelta(seconds=30),
                retry_policy=RetryPolicy(maximum_interval=timedelta(seconds=30)),
            )
            return AutomationDelivered(status="failed")
