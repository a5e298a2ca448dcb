"""The Temporal Schedule behind each automation: `periodic` is a cron spec in its timezone, `once` a calendar
spec at `run_at` with one action; pausing the automation pauses the Schedule.

Policy, chosen so that one occurrence is delivered at most once and an outage never floods a session:
- Overlap SKIP: a run only records and delivers (seconds), so two runs of one automation overlap only when
  Temporal catches up on occurrences missed while it was down; then the first runs and the rest are skipped.
- Catch-up window DA_AUTOMATION_CATCHUP_WINDOW (1 hour by default): when Temporal is back after the whole stack
  was down, an occurrence missed within the window runs (once, however many fell in it); older ones do not.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleCalendarSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleRange,
    ScheduleSpec,
    ScheduleState,
    ScheduleUpdate,
    ScheduleUpdateInput,
)
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.service import RPCError, RPCStatusCode

from store.agent_sessions.automations import AutomationRecord
from workflows.automation_run import AutomationRun, AutomationRunInput, run_workflow_id, schedule_id
from workflows.search_attributes import AUTOMATION_ID


def _findable(automation_id: str) -> TypedSearchAttributes:
    """What lets an operator find the Schedule and its runs in the Temporal UI: `AutomationId="auto_…"`."""
    return TypedSearchAttributes([SearchAttributePair(AUTOMATION_ID, automation_id)])


def _at(moment: datetime) -> ScheduleCalendarSpec:
    utc = moment.astimezone(UTC)

    def one(value: int) -> list[ScheduleRange]:
        return [ScheduleRange(value)]

    return ScheduleCalendarSpec(
        second=one(utc.second),
        minute=one(utc.minute),
        hour=one(utc.hour),
        day_of_month=one(utc.day),
        month=one(utc.month),
        year=one(utc.year),
    )


def schedule_of(record: AutomationRecord, task_queue: str, catchup_window: float) -> Schedule:
    body = record.body
    if record.kind == "periodic":
        spec = ScheduleSpec(cron_expressions=[body["expression"]], time_zone_name=body["timezone"])
        state = ScheduleState(paused=record.status != "active", note=record.pause_reason)
    else:
        spec = ScheduleSpec(calendars=[_at(datetime.fromtimestamp(body["run_at"], UTC))])
        state = ScheduleState(
            paused=record.status != "active", note=record.pause_reason, limited_actions=True, remaining_actions=1
        )
    return Schedule(
        action=ScheduleActionStartWorkflow(
            AutomationRun.run,
            AutomationRunInput(automation_id=record.automation_id),
            id=run_workflow_id(record.automation_id),
            task_queue=task_queue,
            typed_search_attributes=_findable(record.automation_id),
        ),
        spec=spec,
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP, catchup_window=timedelta(seconds=catchup_window)),
        state=state,
    )


async def create_schedule(client: Client, record: AutomationRecord, task_queue: str, catchup_window: float) -> None:
    await client.create_schedule(
        schedule_id(record.automation_id),
        schedule_of(record, task_queue, catchup_window),
        search_attributes=_findable(record.automation_id),
    )


async def replace_schedule(client: Client, record: AutomationRecord, task_queue: str, catchup_window: float) -> None:
    """Make the Schedule say what the automation now says (its spec, target and paused state); a Schedule made
    before it carried its AutomationId gets it here too."""
    schedule = schedule_of(record, task_queue, catchup_window)

    def replace(_: ScheduleUpdateInput) -> ScheduleUpdate:
        return ScheduleUpdate(schedule=schedule, search_attributes=_findable(record.automation_id))

    await client.get_schedule_handle(schedule_id(record.automation_id)).update(replace)


async def pause_schedule(client: Client, automation_id: str, note: str | None = None) -> None:
    await client.get_schedule_handle(schedule_id(automation_id)).pause(note=note or "paused")


async def delete_schedule(client: Client, automation_id: str) -> None:
    try:
        await client.get_schedule_handle(schedule_id(automation_id)).delete()
    except RPCError as error:
        if error.status != RPCStatusCode.NOT_FOUND:
            raise


async def start_manual_run(client: Client, automation_id: str, invocation_id: str, task_queue: str) -> None:
    """A manual invocation's run, outside the Schedule (its overlap policy is for scheduled occurrences)."""
    await client.start_workflow(
        AutomationRun.run,
        AutomationRunInput(automation_id=automation_id, invocation_id=invocation_id),
        id=f"{run_workflow_id(automation_id)}-{invocation_id}",
        task_queue=task_queue,
        search_attributes=_findable(automation_id),
    )
