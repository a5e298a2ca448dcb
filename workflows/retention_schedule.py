"""The Temporal Schedule that runs `RetentionSweep` every DA_RETENTION_PERIOD with the TTLs of DA_RETENTION.

Created, updated or deleted to match the settings whenever an API process or a worker starts: idempotent, so
every process may do it (the last to start wins, and all of one deployment share their settings). Without
any TTL the Schedule is deleted, so turning retention off stops it.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleUpdate,
    ScheduleUpdateInput,
)
from temporalio.service import RPCError, RPCStatusCode

from configuration.settings import Settings
from workflows.retention import SCHEDULE_ID, SWEEP_WORKFLOW_ID, RetentionPolicy, RetentionSweep

log = logging.getLogger(__name__)


def retention_schedule(settings: Settings) -> Schedule:
    policy = RetentionPolicy(ttls=settings.retention, batch=settings.retention_batch)
    return Schedule(
        action=ScheduleActionStartWorkflow(
            RetentionSweep.run, policy, id=SWEEP_WORKFLOW_ID, task_queue=settings.task_queue
        ),
        spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=timedelta(seconds=settings.retention_period))]),
        # A sweep still running when the next is due: the next is skipped, never run beside it.
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP),
    )


async def ensure_retention_schedule(client: Client, settings: Settings) -> None:
    handle = client.get_schedule_handle(SCHEDULE_ID)
    if not settings.retention:
        try:
            await handle.delete()
            log.info("retention is off: its schedule was deleted")
        except RPCError as error:
            # A deployment that never used retention must not fail to start on it (a namespace whose
            # credentials may not touch schedules, say): only say so.
            if error.status != RPCStatusCode.NOT_FOUND:
                log.warning("retention is off, but its schedule could not be checked for deletion: %s", error)
        return
    schedule = retention_schedule(settings)
    try:
        await client.create_schedule(SCHEDULE_ID, schedule)
    except ScheduleAlreadyRunningError:

        def replace(_: ScheduleUpdateInput) -> ScheduleUpdate:
            return ScheduleUpdate(schedule=schedule)

        await handle.update(replace)
    kinds = ", ".join(f"{kind} {ttl}" for kind, ttl in sorted(settings.retention.items()))
    log.info("retention every %s s: %s", settings.retention_period, kinds)
