"""Automations with the unmodified `openai` SDK: Temporal Schedules that create sessions or feed an existing one.
Periodic (its first occurrence awaited, bounded), once (a few seconds ahead), paused, resumed and invoked by hand,
each delivering a turn; the invocation log; and the refusals a caller can act on."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from openai import OpenAI

from store.database import sqlite_module
from tests.support.processes import EVENT_SECONDS, wait_until
from tests.support.scripted_model import ScriptedModel, text
from tests.support.stack import SCRIPTED_MODEL, Stack
from workflows.automation_run import run_workflow_id, schedule_id

NONE: Any = {"type": "none"}


def new_session_target(question: str) -> Any:
    return {
        "type": "new_session",
        "environment": NONE,
        "agent": {"model": SCRIPTED_MODEL, "instructions": "Report briefly."},
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": question}]}],
        "metadata": {"origin": "automation"},
    }


def wait_invocation(client: OpenAI, automation_id: str, seconds: float, **wanted: Any) -> Any:
    """The first invocation of the automation whose fields have the wanted values, or None after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for invocation in client.beta.agents.automations.invocations.list(automation_id).data:
            matches = all(getattr(invocation, name) == value for name, value in wanted.items())
            if matches and invocation.status != "queued":
                return invocation
        time.sleep(0.2)
    return None


def answered(client: OpenAI, session_id: str, seconds: float = EVENT_SECONDS) -> str:
    """The session's last answer once it is idle."""
    deadline = time.monotonic() + seconds
    while client.beta.agents.sessions.retrieve(session_id).status != "idle":
        assert time.monotonic() < deadline, "the delivered turn did not finish"
        time.sleep(0.1)
    items = client.beta.agents.sessions.items.list(session_id, order="asc").data
    last: Any = items[-1]
    return "".join(part.text for part in last.content).strip()


def _clear_of_the_next_minute(seconds: float) -> None:
    """Wait, if need be, until the next minute is at least `seconds` away: what a minutely Schedule must not fire
    within (its occurrence would take a scripted answer meant for another turn)."""
    if 60 - time.time() % 60 < seconds:
        time.sleep(60 - time.time() % 60 + 0.5)


def test_a_periodic_automation_paused_resumed_and_invoked_delivers_a_turn_each_time(
    client: OpenAI, model: ScriptedModel
) -> None:
    model.script(text("Paused but invoked."), text("Scheduled report."), text("Manual report."))
    _clear_of_the_next_minute(15)  # from its creation to its pause, the minutely Schedule does not fire
    created = client.beta.agents.automations.create(
        type="periodic",
        name="minutely report",
        expression="* * * * *",
        timezone="Europe/Paris",
        target=new_session_target("Report the news."),
        metadata={"team": "ops"},
    )
    paused = client.beta.agents.automations.pause(created.id)
    assert created.object == "agent.automation" and created.status == "active" and created.type == "periodic"
    assert paused.status == "paused"
    assert client.beta.agents.automations.retrieve(created.id).expression == "* * * * *"
    assert created.id in [found.id for found in client.beta.agents.automations.list().data]

    invoked = client.beta.agents.automations.invocations.create(created.id)  # pause stops scheduled runs only
    assert invoked.status == "queued" and invoked.source.type == "manual" and invoked.scheduled_at is None
    found = wait_invocation(client, created.id, EVENT_SECONDS, id=invoked.id)
    assert found is not None and found.status == "completed", found
    assert answered(client, found.session_id) == "Paused but invoked."
    session = client.beta.agents.sessions.retrieve(found.session_id)
    assert session.metadata == {"origin": "automation"}

    resumed = client.beta.agents.automations.resume(created.id)
    assert resumed.status == "active" and resumed.pause_reason is None
    scheduled = wait_invocation(client, created.id, 60 + EVENT_SECONDS, status="completed", scheduled_at=_any_time())
    assert scheduled is not None, "the resumed schedule did not fire within its minute"
    assert scheduled.source.type == "automation" and scheduled.source.automation.id == created.id
    assert answered(client, scheduled.session_id) == "Scheduled report."

    # Invoked by hand while active, in the minute after an occurrence, then paused before the next one.
    again = client.beta.agents.automations.invocations.create(created.id)
    delivered = wait_invocation(client, created.id, EVENT_SECONDS, id=again.id)
    client.beta.agents.automations.pause(created.id)
    assert delivered is not None and delivered.status == "completed", delivered
    assert answered(client, delivered.session_id) == "Manual report."
    assert len(model.requests) == 3

    client.beta.agents.automations.delete(created.id)
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.automations.retrieve(created.id)


class _any_time:
    """Equal to any timestamp: matches a scheduled (not manual) invocation."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, int)

    def __hash__(self) -> int:
        return 0


def found_by_automation_id(stack: Stack, automation_id: str) -> tuple[list[str], list[str]]:
    """What an operator's `AutomationId="…"` query finds: the ids of the workflows (runs), and of the Schedules."""

    wanted = f'AutomationId="{automation_id}"'

    async def query() -> tuple[list[str], list[str]] | None:
        runs = [wf.id async for wf in stack.client.list_workflows(wanted)]
        schedules = [schedule.id async for schedule in await stack.client.list_schedules(wanted)]
        return (runs, schedules) if runs and schedules else None

    # Visibility is eventually consistent, for Schedules as for workflows.
    return wait_until(lambda: stack.background.run(query()), f"what {wanted} finds", EVENT_SECONDS)


def test_a_once_automation_runs_at_its_time_then_completes(client: OpenAI, model: ScriptedModel, stack: Stack) -> None:
    model.script(text("Reminder delivered."))
    run_at = int(time.time()) + 4
    created = client.beta.agents.automations.create(
        type="once", name="reminder", run_at=run_at, target=new_session_target("Remind me.")
    )
    assert created.type == "once" and created.run_at == run_at
    scheduled = wait_invocation(client, created.id, EVENT_SECONDS, status="completed")
    assert scheduled is not None, "the one-time automation did not run"
    assert scheduled.scheduled_at == run_at and scheduled.source.type == "automation"
    assert answered(client, scheduled.session_id) == "Reminder delivered."
    assert client.beta.agents.automations.retrieve(created.id).status == "completed"
    with pytest.raises(openai.BadRequestError):
        client.beta.agents.automations.resume(created.id)
    assert len(client.beta.agents.automations.invocations.list(created.id).data) == 1
    runs, schedules = found_by_automation_id(stack, created.id)
    assert len(runs) == 1 and runs[0].startswith(run_workflow_id(created.id)), runs  # Temporal appends the time
    assert schedules == [schedule_id(created.id)]


@contextlib.contextmanager
def _store_writes_held(stack: Stack, until: float) -> Iterator[None]:
    """Another process's write transaction on the SQLite store until `until` (epoch seconds): the API's next write
    waits for it, as it would behind a busy store."""
    held = threading.Event()

    def hold() -> None:
        path = stack.settings.store_url.removeprefix("sqlite+aiosqlite:///")
        with contextlib.closing(sqlite_module().connect(path, isolation_level=None)) as db:
            db.execute("BEGIN IMMEDIATE")
            held.set()
            time.sleep(max(0.0, until - time.time()))
            db.execute("COMMIT")

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(30), "the store's write lock was not taken"
        yield
    finally:
        holder.join()


def test_a_once_automation_due_while_its_create_waited_on_the_store_still_runs_once(
    client: OpenAI, model: ScriptedModel, stack: Stack
) -> None:
    """The API takes `run_at` in as future, but its Schedule reaches Temporal only after that time: Temporal's
    scheduler counts from when it takes a Schedule up, so the occurrence is backfilled, under its own time."""
    model.script(text("On time."))
    run_at = int(time.time()) + 2
    with _store_writes_held(stack, until=run_at + 0.5):
        created = client.beta.agents.automations.create(
            type="once", name="right away", run_at=run_at, target=new_session_target("Now.")
        )
    described = stack.background.run(stack.client.get_schedule_handle(schedule_id(created.id)).describe())
    assert described.info.created_at is not None and described.info.created_at.timestamp() > run_at
    delivered = wait_invocation(client, created.id, EVENT_SECONDS, status="completed")
    assert delivered is not None, "the occurrence did not run"
    assert delivered.scheduled_at == run_at and delivered.source.type == "automation"
    assert answered(client, delivered.session_id) == "On time."
    assert len(client.beta.agents.automations.invocations.list(created.id).data) == 1
    runs, _ = found_by_automation_id(stack, created.id)
    assert len(runs) == 1, runs


def test_an_existing_session_target_gets_a_turn_and_a_busy_session_skips_the_delivery(
    client: OpenAI, model: ScriptedModel
) -> None:
    busy = threading.Event()  # the model answers the delivered turn only once the next invocation was skipped
    model.script(text("First."), text("Checked in.", held_until=busy))
    session = client.beta.agents.sessions.create(environment=NONE, agent={"model": SCRIPTED_MODEL}, input="Hello")
    assert answered(client, session.id) == "First."
    automation = client.beta.agents.automations.create(
        type="periodic",
        name="check-in",
        expression="0 9 * * 1-5",
        timezone="UTC",
        target={"type": "existing_session", "session_id": session.id, "instructions": "Check in on the task."},
    )
    assert [found.id for found in client.beta.agents.automations.list(session_id=session.id).data] == [automation.id]

    first = client.beta.agents.automations.invocations.create(automation.id)
    delivered = wait_invocation(client, automation.id, EVENT_SECONDS, id=first.id)
    assert delivered is not None and delivered.status == "completed" and delivered.session_id == session.id
    try:
        second = client.beta.agents.automations.invocations.create(automation.id)  # the session is still answering
        skipped = wait_invocation(client, automation.id, EVENT_SECONDS, id=second.id)
    finally:
        busy.set()
    assert skipped is not None and skipped.status == "skipped" and skipped.skip_reason == "pending_delivery"
    assert answered(client, session.id) == "Checked in."
    turns = client.beta.agents.sessions.turns.list(session.id).data
    assert len(turns) == 2
    texts = [model_request["messages"][-1]["content"] for model_request in model.requests]
    assert texts[-1] == "Check in on the task."
    log = client.beta.agents.automations.invocations.list(automation.id, order="asc").data
    assert [(i.id, i.status) for i in log] == [(first.id, "completed"), (second.id, "skipped")]
    assert client.beta.agents.automations.invocations.retrieve(second.id, automation_id=automation.id).id == second.id

    client.beta.agents.sessions.delete(session.id)
    third = client.beta.agents.automations.invocations.create(automation.id)
    failed = wait_invocation(client, automation.id, EVENT_SECONDS, id=third.id)
    assert failed is not None and failed.status == "failed" and failed.error is not None, failed
    assert session.id in failed.error.message
    paused = client.beta.agents.automations.retrieve(automation.id)
    assert paused.status == "paused" and paused.pause_reason == "target_session_failed"


def test_automations_refuse_what_cannot_run(client: OpenAI) -> None:
    target: Any = new_session_target("x")
    automations = client.beta.agents.automations
    with pytest.raises(openai.BadRequestError, match="5-field cron"):
        automations.create(type="periodic", name="n", expression="* * *", timezone="UTC", target=target)
    with pytest.raises(openai.BadRequestError, match="IANA"):
        automations.create(type="periodic", name="n", expression="* * * * *", timezone="Mars/Base", target=target)
    with pytest.raises(openai.BadRequestError, match="future"):
        automations.create(type="once", name="n", run_at=int(time.time()) - 10, target=target)
    no_environment: Any = {**target, "environment": None}
    with pytest.raises(openai.BadRequestError, match="environment"):
        automations.create(type="once", name="n", run_at=int(time.time()) + 600, target=no_environment)
    saved_agent: Any = {**target, "agent": None, "agent_id": "agent_x"}
    with pytest.raises(openai.NotFoundError):
        automations.create(type="once", name="n", run_at=int(time.time()) + 600, target=saved_agent)
    with pytest.raises(openai.NotFoundError):
        automations.create(
            type="once",
            name="n",
            run_at=int(time.time()) + 600,
            target={"type": "existing_session", "session_id": "sess_nope", "instructions": "x"},
        )
    with pytest.raises(openai.NotFoundError):
        automations.invocations.create("auto_nope")
    created = automations.create(type="once", name="n", run_at=int(time.time()) + 600, target=target)
    with pytest.raises(openai.BadRequestError, match="periodic"):
        automations.update(created.id, expression="* * * * *")
    updated = automations.update(created.id, name="renamed", metadata={"k": "v"})
    assert updated.name == "renamed" and updated.metadata == {"k": "v"}
    automations.delete(created.id)
