"""A turn create cut by a crash is never lost: the API process dies (SIGKILL, from a fault point)
after recording the turn and before starting its workflow. A retry with the same Idempotency-Key
finishes what the first attempt started; without any retry, the sweep of unstarted turns does."""

from __future__ import annotations

import time

import httpx
import pytest

from hosting.fault_points import AFTER_TURN_ROW
from tests.support.processes import EVENT_SECONDS, ProcessStack
from tests.support.rest import create_agent, create_session
from tests.support.scripted_model import text

pytestmark = pytest.mark.processes

NO_SWEEP = {"DA_UNSTARTED_TURN_SWEEP": "0"}


def _session(processes: ProcessStack, http: httpx.Client) -> str:
    agent_id = create_agent(http)
    return f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}"


def _create_and_crash(processes: ProcessStack, session: str, headers: dict[str, str], **options: object) -> None:
    """Restart the API armed to die between the turn's row and its workflow, and create a turn there."""
    processes.kill(processes.api)
    processes.start_api(DA_TEST_FAULT=AFTER_TURN_ROW, **NO_SWEEP)
    ask = {"messages": [{"role": "user", "content": "hello"}], "stream": False, **options}
    with pytest.raises(httpx.TransportError), httpx.Client(base_url=processes.url, timeout=30) as http:
        http.post(f"{session}/turn", json=ask, headers=headers)
    assert processes.api is not None and processes.api.wait(timeout=10) == -9


def _stored_turns(http: httpx.Client, session: str) -> list[dict]:
    return http.get(session).json()["turns"]


def test_a_retried_create_starts_the_workflow_the_crashed_attempt_did_not(processes: ProcessStack) -> None:
    processes.model.script(text("answered after the crash"))
    with httpx.Client(base_url=processes.url, timeout=60) as http:
        session = _session(processes, http)
    key = {"Idempotency-Key": "create-once"}

    _create_and_crash(processes, session, key)
    processes.start_api(**NO_SWEEP)
    with httpx.Client(base_url=processes.url, timeout=60) as http:
        [orphan] = _stored_turns(http, session)
        assert orphan["status"] == "running" and orphan["steps"] == []
        time.sleep(1)
        assert processes.model.requests == []  # no workflow: nothing happens on its own

        retried = http.post(f"{session}/turn", json={"messages": [{"role": "user", "content": "hello"}]}, headers=key)
        assert retried.status_code == 200, retried.text
        turn = retried.json()
        assert turn["turn_id"] == orphan["turn_id"]
        assert turn["status"] == "completed"
        assert turn["output_message"]["content"] == "answered after the crash "
        assert [t["turn_id"] for t in _stored_turns(http, session)] == [orphan["turn_id"]]
    assert len(processes.model.requests) == 1


def test_the_sweep_starts_a_turn_whose_client_never_retried(processes: ProcessStack) -> None:
    processes.model.script(text("swept"))
    with httpx.Client(base_url=processes.url, timeout=60) as http:
        session = _session(processes, http)

    # The turn's own tool_config is stored with it, so the sweep starts the turn as it was asked for.
    _create_and_crash(processes, session, {}, tool_config={"tool_choice": "none"})
    processes.start_api(DA_UNSTARTED_TURN_SWEEP="1")
    with httpx.Client(base_url=processes.url, timeout=60) as http:
        deadline = time.monotonic() + EVENT_SECONDS
        while (turns := _stored_turns(http, session))[0]["status"] != "completed":
            assert time.monotonic() < deadline, f"the unstarted turn was never started: {turns}"
            time.sleep(0.2)
        assert len(turns) == 1
        assert turns[0]["output_message"]["content"] == "swept "
    assert len(processes.model.requests) == 1
    assert not processes.model.requests[0].get("tools"), "the turn's tool_choice none was not honoured"
