"""An automation due while the processes that would run it are SIGKILLed: once they are back, the missed
occurrence runs and is delivered once — one invocation, one session, one model call.

Two outages: Temporal and the separate worker down (Temporal's catch-up runs the occurrence), and, in
`make run`'s layout where the API process hosts the worker, that API down (Temporal fires on time and the
run waits in the task queue until the restarted API's worker takes it)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from openai import OpenAI

from tests.support.processes import ProcessStack
from tests.support.scripted_model import text
from tests.support.stack import SCRIPTED_MODEL

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


def _outage_until_after(processes: ProcessStack, outage: str, run_at: int) -> None:
    """SIGKILL what `outage` names, let the occurrence come and go with it down, then start it again."""
    if outage == TEMPORAL_AND_WORKER:
        processes.kill(processes.worker)
        processes.kill(processes.temporal)
    else:
        processes.kill(processes.api)
    while time.time() < run_at + 5:
        time.sleep(0.2)
    if outage == TEMPORAL_AND_WORKER:
        processes.start_temporal()
        processes.start_worker()
        processes.kill(processes.api)  # a fresh API, whose client connects to the restarted server
        processes.start_api()
    else:
        processes.start_api(DA_WORKER_IN_API="true")


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
    run_at = int(time.time()) + 6
    target: Any = {
        "type": "new_session",
        "environment": {"type": "none"},
        "agent": {"model": SCRIPTED_MODEL},
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Wake up."}]}],
        "metadata": {"outage": outage},
    }
    automation = client.beta.agents.automations.create(type="once", name="during outage", run_at=run_at, target=target)

    _outage_until_after(processes, outage, run_at)

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
    sessions = client.beta.agents.sessions.list(extra_query={"metadata[outage]": outage}).data
    assert [session.id for session in sessions] == [session_id]
    assert len(processes.model.requests) == 1
    assert client.beta.agents.automations.retrieve(automation.id).status == "completed"
