"""An automation due while Temporal and the worker are down (both SIGKILLed): once they are back, Temporal's
catch-up runs the missed occurrence, and it is delivered once — one invocation, one session, one model call."""

from __future__ import annotations

import time
from typing import Any

import pytest
from openai import OpenAI

from tests.support.processes import ProcessStack
from tests.support.scripted_model import text
from tests.support.stack import SCRIPTED_MODEL

pytestmark = pytest.mark.processes


def test_an_occurrence_due_during_an_outage_runs_once_when_the_stack_is_back(processes: ProcessStack) -> None:
    processes.model.script(text("Delivered after the outage."))
    client = OpenAI(base_url=f"{processes.url}/v1", api_key="unused", max_retries=2, timeout=60)
    run_at = int(time.time()) + 6
    target: Any = {
        "type": "new_session",
        "environment": {"type": "none"},
        "agent": {"model": SCRIPTED_MODEL},
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Wake up."}]}],
        "metadata": {"outage": "yes"},
    }
    automation = client.beta.agents.automations.create(type="once", name="during outage", run_at=run_at, target=target)

    processes.kill(processes.worker)
    processes.kill(processes.temporal)
    while time.time() < run_at + 5:  # the occurrence comes and goes with nothing running
        time.sleep(0.2)
    processes.start_temporal()
    processes.start_worker()
    processes.kill(processes.api)  # a fresh API, whose client connects to the restarted server
    processes.start_api()

    deadline = time.monotonic() + 90
    log: list[Any] = []
    while time.monotonic() < deadline:
        log = client.beta.agents.automations.invocations.list(automation.id).data
        if log and log[0].status != "queued":
            break
        time.sleep(0.5)
    assert [(i.status, i.scheduled_at, i.source.type) for i in log] == [("completed", run_at, "automation")], log
    session_id = log[0].session_id
    assert session_id is not None
    while client.beta.agents.sessions.retrieve(session_id).status != "idle":
        assert time.monotonic() < deadline, "the delivered turn did not finish"
        time.sleep(0.2)
    time.sleep(3)  # a duplicate run, were there one, would have delivered by now
    assert len(client.beta.agents.automations.invocations.list(automation.id).data) == 1
    sessions = client.beta.agents.sessions.list(extra_query={"metadata[outage]": "yes"}).data
    assert [session.id for session in sessions] == [session_id]
    assert len(processes.model.requests) == 1
    assert client.beta.agents.automations.retrieve(automation.id).status == "completed"
