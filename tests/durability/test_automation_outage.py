"""An automation due while the processes that would run it are SIGKILLed: once they are back, the missed
occurrence runs and is delivered once — one invocation, one session, one model call.

Two outages: Temporal and the separate worker down (Temporal's catch-up runs the occurrence), and, in
`make run`'s layout where the API process hosts the worker, that API down (Temporal fires on time and the
run waits in the task queue until the restarted API's worker takes it)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import openai
import pytest
from openai import OpenAI
from temporalio.client import ScheduleActionExecutionStartWorkflow, WorkflowExecutionStatus

from tests.support.processes import EVENT_SECONDS, ProcessStack, wait_until
from tests.support.scripted_model import text
from tests.support.stack import SCRIPTED_MODEL
from workflows.automation_run import schedule_id
from workflows.contracts import turn_workflow_id

pytestmark = pytest.mark.processes

TEMPORAL_AND_WORKER = "temporal-and-worker"
API_HOSTING_THE_WORKER = "api-hosting-the-worker"


def _host_the_worker_in_the_api(processes: ProcessStack) -> None:
    """`make run`'s default: no separate worker, the API process runs the turns and the automation runs."""
    processes.kill(processes.worker)
    processes.kill(processes.api)
    processes.start_api(DA_WORKER_IN_API="true")


def _restore_a_separate_worker(processes: ProcessStack) -> None:
    if processes.api is not None and processes.api.poll() is None:
        processes.kill(processes.api)
    processes.start_api()
    processes.start_worker()


def _outage_until_after(processes: ProcessStack, outage: str, automation_id: str, run_at: int) -> None:
    """SIGKILL what `outage` names, let the occurrence come and go with it down, then start it again."""
    if outage == TEMPORAL_AND_WORKER:
        # Temporal first, the moment the create is answered: its scheduler must have taken the Schedule up by then.
        processes.kill(processes.temporal)
        processes.kill(processes.worker)
    else:
        processes.kill(processes.api)
    assert time.time() < run_at, "the outage began after the occurrence was due"
    if outage == TEMPORAL_AND_WORKER:
        while time.time() < run_at + 5:  # missed while Temporal was down
            time.sleep(0.2)
        processes.start_temporal()
        processes.start_worker()
        processes.kill(processes.api)  # a fresh API, whose client connects to the restarted server
        processes.start_api()
    else:
        # Temporal fires on time, with no worker to take the run: it waits in the task queue.
        wait_until(lambda: _schedule_runs(processes, automation_id), "the occurrence's run started", EVENT_SECONDS)
        processes.start_api(DA_WORKER_IN_API="true")


def _schedule_runs(processes: ProcessStack, automation_id: str) -> list[str]:
    """The ids of the workflows the automation's Schedule has started, as Temporal records them."""

    async def describe() -> list[str]:
        schedule = (await processes.temporal_client()).get_schedule_handle(schedule_id(automation_id))
        described = await schedule.describe()
        assert described.info.num_actions == len(described.info.recent_actions)
        actions = [result.action for result in described.info.recent_actions]
        return [action.workflow_id for action in actions if isinstance(action, ScheduleActionExecutionStartWorkflow)]

    return asyncio.run(describe())


def _closed(processes: ProcessStack, workflow_id: str) -> WorkflowExecutionStatus:
    """The workflow's status once it has closed: the store shows a delivery or a turn's end as soon as an activity
    has written it, before Temporal records the activity's completion (and a worker killed next would retry it)."""

    async def status() -> WorkflowExecutionStatus | None:
        described = await (await processes.temporal_client()).get_workflow_handle(workflow_id).describe()
        return described.status if described.status != WorkflowExecutionStatus.RUNNING else None

    return wait_until(lambda: asyncio.run(status()), f"{workflow_id} closing", EVENT_SECONDS)


def _create_due_soon(client: OpenAI, target: Any) -> tuple[str, int]:
    """A once-automation due in a few seconds, early enough that the outage begins before it. On a machine so
    loaded that the create took nearly that long (or longer: refused as past), it is made again further out,
    the one made too late deleted before it is due."""
    automations = client.beta.agents.automations
    for lead in (6, 12, 24, 48):
        run_at = int(time.time()) + lead
        try:
            automation = automations.create(type="once", name="during outage", run_at=run_at, target=target)
        except openai.BadRequestError as refused:
            assert "has passed" in refused.message, refused
            continue
        if time.time() < run_at - 2:
            return automation.id, run_at
        automations.delete(automation.id)  # were it due meanwhile, its run finds it gone and delivers nothing
    raise AssertionError("the API took too long to create an automation")


@pytest.mark.parametrize("outage", [TEMPORAL_AND_WORKER, API_HOSTING_THE_WORKER])
def test_an_occurrence_due_during_an_outage_runs_once_when_the_stack_is_back(
    processes: ProcessStack, outage: str
) -> None:
    if outage == API_HOSTING_THE_WORKER:
        _host_the_worker_in_the_api(processes)
    try:
        _assert_delivered_once_after(processes, outage)
    finally:
        if outage == API_HOSTING_THE_WORKER:
            _restore_a_separate_worker(processes)


def _assert_delivered_once_after(processes: ProcessStack, outage: str) -> None:
    processes.model.script(text("Delivered after the outage."))
    client = OpenAI(base_url=f"{processes.url}/v1", api_key="unused", max_retries=2, timeout=60)
    target: Any = {
        "type": "new_session",
        "environment": {"type": "none"},
        "agent": {"model": SCRIPTED_MODEL},
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Wake up."}]}],
        "metadata": {"outage": outage},
    }
    client.beta.agents.automations.list()  # the API's first request, which a fresh process answers slowly
    automation_id, run_at = _create_due_soon(client, target)

    _outage_until_after(processes, outage, automation_id, run_at)

    def delivered() -> list[Any]:
        log = client.beta.agents.automations.invocations.list(automation_id).data
        return log if log and log[0].status != "queued" else []

    log = wait_until(delivered, "the invocation's delivery", EVENT_SECONDS)
    assert [(i.status, i.scheduled_at, i.source.type) for i in log] == [("completed", run_at, "automation")], log
    session_id = log[0].session_id
    assert session_id is not None
    wait_until(lambda: client.beta.agents.sessions.retrieve(session_id).status == "idle", "idle", EVENT_SECONDS)
    # Nothing is left to run: the Schedule started one run, which has ended, and so has the turn it delivered.
    [run] = _schedule_runs(processes, automation_id)
    assert _closed(processes, run) == WorkflowExecutionStatus.COMPLETED
    [turn] = client.beta.agents.sessions.turns.list(session_id).data
    assert _closed(processes, turn_workflow_id(turn.id)) == WorkflowExecutionStatus.COMPLETED
    assert len(client.beta.agents.automations.invocations.list(automation_id).data) == 1
    sessions = client.beta.agents.sessions.list(extra_query={"metadata[outage]": outage}).data
    assert [session.id for session in sessions] == [session_id]
    assert len(processes.model.requests) == 1
    assert client.beta.agents.automations.retrieve(automation_id).status == "completed"
