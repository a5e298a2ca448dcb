"""The Temporal Schedule behind each automation: `periodic` is a cron spec in its timezone, `once` a calendar
spec at `run_at` with one action; pausing the automation pauses the Schedule.

Policy, chosen so that one occurrence is delivered at most once and an outage never floods a session:
- Overlap SKIP: a run only records and delivers (seconds), so two runs of one automation overlap only when
  Temporal catches up on occurrences missed while it was down; then the first runs and the rest are skipped.
- Catch-up window DA_AUTOMATION_CATCHUP_WINDOW (1 hour by default): when Temporal is back after the whole stack
  was down, an occurrence missed within the window runs (once, however many fell in it); older ones do not.
- Counted from the request: a create or an update is acknowledged only once Temporal's scheduler has taken it up
  (`_taken_up`), so an occurrence after the acknowledgement survives Temporal stopping, and one that fell between
  the request and a slow take-up is backfilled.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleBackfill,
    ScheduleCalendarSpec,
    ScheduleHandle,
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


def _missed(record: AutomationRecord, taken_up: datetime) -> tuple[datetime, datetime] | None:
    """The span of the record's occurrences that Temporal's scheduler, having taken the Schedule up only at
    `taken_up`, will not run itself: from when the API took the change in (a `once` automation's run_at, which
    it took in only as a future time), to `taken_up`."""
    if record.status != "active":
        return None
    if record.kind == "once":
        run_at = datetime.fromtimestamp(record.body["run_at"], UTC)
        return (run_at, run_at) if run_at <= taken_up else None
    return (record.updated_at, taken_up) if record.updated_at < taken_up else None


async def _taken_up(handle: ScheduleHandle, record: AutomationRecord) -> None:
    """Return once Temporal's scheduler has taken up what was just sent, having run anything it skipped.

    The scheduler counts occurrences from the moment its workflow processes a new or updated Schedule, not from
    the request: were Temporal to stop in between, it would come back counting from after its restart, and an
    occurrence due meanwhile (a `once` automation's only one) would never run; so would one that fell before a
    slow take-up. A describe is answered only after the scheduler has processed everything sent to it, and a
    backfill starts the occurrences it skipped under their own times: the same run ids and run keys the
    scheduler would have used, so nothing runs twice."""
    described = await handle.describe()
    taken_up = described.info.last_updated_at or described.info.created_at
    if taken_up is not None and (missed := _missed(record, taken_up)) is not None:
        await handle.backfill(ScheduleBackfill(start_at=missed[0], end_at=missed[1]))


async def create_schedule(client: Client, record: AutomationRecord, task_queue: str, catchup_window: float) -> None:
    handle = await client.create_schedule(
        schedule_id(record.automation_id),
        schedule_of(record, task_queue, catchup_window),
        search_attributes=_findable(record.automation_id),
    )
    await _taken_up(handle, record)


async def replace_schedule(client: Client, record: AutomationRecord, task_queue: str, catchup_window: float) -> None:
    """Make the Schedule say what the automation now says (its spec, target and paused state); a Schedule made
    before it carried its AutomationId gets it here too."""
    schedule = schedule_of(record, task_queue, catchup_window)

    def replace(_: ScheduleUpdateInput) -> ScheduleUpdate:
        return ScheduleUpdate(schedule=schedule, search_attributes=_findable(record.automation_id))

    handle = client.get_schedule_handle(schedule_id(record.automation_id))
    await handle.update(replace)
    await _taken_up(handle, record)


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
