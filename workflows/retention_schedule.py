"""The Temporal Schedule that runs `RetentionSweep` every DA_RETENTION_PERIOD.

The Schedule always exists, whatever DA_RETENTION says: each sweep reads its TTLs from the worker that runs it
(workflows/retention.py), and every sweep also deletes what is past its own `expires_after` and the webhook
delivery log past its TTL. So no process decides for the others whether retention runs, and which process
started last does not matter. Every worker (and an API process hosting one) puts it in place when it starts:
created if missing, updated only if its period or task queue differs from this process's settings — so
processes of one configuration, started in any order or at once, leave it alone after the first.

A sweep the Schedule started on a task queue it no longer names is terminated: no worker of this configuration
polls that queue, so the sweep would never end, and the Schedule would skip every later sweep behind it.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionExecutionStartWorkflow,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleUpdate,
    ScheduleUpdateInput,
    WorkflowExecutionStatus,
)
from temporalio.service import RPCError

from configuration.settings import Settings
from workflows.retention import SCHEDULE_ID, SWEEP_WORKFLOW_ID, RetentionPolicy, RetentionSweep

log = logging.getLogger(__name__)


def retention_schedule(settings: Settings) -> Schedule:
    return Schedule(
        action=ScheduleActionStartWorkflow(
            RetentionSweep.run, RetentionPolicy(), id=SWEEP_WORKFLOW_ID, task_queue=settings.task_queue
        ),
        spec=ScheduleSpec(intervals=[_interval(settings)]),
        # A sweep still running when the next is due: the next is skipped, never run beside it.
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP),
    )


def _interval(settings: Settings) -> ScheduleIntervalSpec:
    return ScheduleIntervalSpec(every=timedelta(seconds=settings.retention_period))


def _matches(schedule: Schedule, settings: Settings) -> bool:
    action = schedule.action
    return (
        isinstance(action, ScheduleActionStartWorkflow)
        and action.task_queue == settings.task_queue
        and [interval.every for interval in schedule.spec.intervals] == [_interval(settings).every]
    )


async def ensure_retention_schedule(client: Client, settings: Settings) -> None:
    try:
        await _ensure(client, settings)
    except RPCError as error:
        if settings.retention:
            raise
        # A deployment that sets no TTL must not fail to start on it (a namespace whose credentials may not
        # touch schedules, say): only say what it misses.
        log.warning("the retention schedule could not be put in place (expires_after is not swept): %s", error)


async def _ensure(client: Client, settings: Settings) -> None:
    schedule = retention_schedule(settings)
    try:
        await client.create_schedule(SCHEDULE_ID, schedule)
        log.info("retention schedule created: every %s s", settings.retention_period)
        return
    except ScheduleAlreadyRunningError:
        pass
    changed = False

    def replace(current: ScheduleUpdateInput) -> ScheduleUpdate | None:
        nonlocal changed
        if _matches(current.description.schedule, settings):
            return None  # the same settings: nothing to write, so processes starting together never flap
        changed = True
        return ScheduleUpdate(schedule=schedule)

    await client.get_schedule_handle(SCHEDULE_ID).update(replace)
    if changed:
        log.info("retention schedule updated: every %s s", settings.retention_period)
    await _end_sweeps_on_other_queues(client, settings.task_queue)


async def _end_sweeps_on_other_queues(client: Client, task_queue: str) -> None:
    described = await client.get_schedule_handle(SCHEDULE_ID).describe()
    for action in described.info.running_actions:
        if not isinstance(action, ScheduleActionExecutionStartWorkflow):
            continue
        sweep = client.get_workflow_handle(action.workflow_id, run_id=action.first_execution_run_id)
        run = await sweep.describe()
        if run.status == WorkflowExecutionStatus.RUNNING and run.task_queue != task_queue:
            await sweep.terminate(reason=f"the retention schedule now runs its sweeps on task queue {task_queue!r}")
            log.warning(
                "retention sweep %s terminated: it ran on task queue %r, which the schedule left",
                run.id,
                run.task_queue,
            )
