"""Real faults: processes killed with SIGKILL mid-turn. Nothing is lost, nothing is done twice."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from hosting.fault_points import AFTER_TURN_END
from tests.support import mcp_server
from tests.support.processes import EVENT_SECONDS, ProcessStack
from tests.support.rest import create_agent, create_session, final_turn, sse_events
from tests.support.scripted_model import Reply, text, tool_call
from workflows.contracts import turn_workflow_id

pytestmark = pytest.mark.processes


@pytest.fixture
def http(processes: ProcessStack) -> Iterator[httpx.Client]:
    processes.model.script()
    with httpx.Client(base_url=processes.url, timeout=120) as client:
        yield client


def _turns(http: httpx.Client) -> str:
    agent_id = create_agent(http)
    return f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"


def _ask(content: str, stream: bool = False) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": content}], "stream": stream}


def _in_background(call: Callable[[], httpx.Response]) -> tuple[threading.Thread, list[httpx.Response]]:
    results: list[httpx.Response] = []
    thread = threading.Thread(target=lambda: results.append(call()))
    thread.start()
    return thread, results


def test_worker_killed_during_a_model_call(processes: ProcessStack, http: httpx.Client) -> None:
    unanswered = threading.Event()  # the first call lasts until the worker making it is gone, however long that takes
    processes.model.script(text("slow first attempt", held_until=unanswered), text("second attempt"))
    turns = _turns(http)
    thread, results = _in_background(lambda: http.post(turns, json=_ask("hi")))
    try:
        processes.wait_for_model_requests(1)
        processes.kill(processes.worker)
    finally:
        unanswered.set()
    processes.start_worker()
    thread.join(timeout=120)

    turn = results[0].json()
    assert turn["status"] == "completed"
    assert turn["output_message"]["content"] == "second attempt "
    assert [s["step_type"] for s in turn["steps"]] == ["inference"]
    assert len(processes.model.requests) == 2


def test_a_model_call_retried_after_a_crash_streams_as_one_answer(processes: ProcessStack, http: httpx.Client) -> None:
    words = " ".join(f"w{i}" for i in range(30))
    processes.model.script(text(words, token_delay_seconds=0.1), text(words))
    turns = _turns(http)
    deltas: list[str] = []
    with http.stream("POST", turns, json=_ask("talk", stream=True)) as stream:
        for line in stream.iter_lines():
            if not line.startswith("data: "):
                continue
            payload = json.loads(line[6:])["event"]["payload"]
            if payload["event_type"] == "step_progress" and payload["delta"]["type"] == "text":
                deltas.append(payload["delta"]["text"])
                if len(deltas) == 5:
                    processes.kill(processes.worker)
                    processes.start_worker()
            if payload["event_type"] == "turn_complete":
                break

    assert len(processes.model.requests) == 2
    assert "".join(deltas) == words + " "


def _ended_by_a_worker_that_then_died(processes: ProcessStack, http: httpx.Client) -> tuple[str, str]:
    """Run a simple turn on a worker that dies right after its inference wrote the turn's end, before it
    reported it; the client has the answer already. Returns the session's turns URL and the turn's id;
    no worker runs. A second model call, if one were made, would answer "asked again"."""
    processes.model.script(text("written once"), text("asked again"))
    turns = _turns(http)
    processes.kill(processes.worker)
    processes.start_worker(DA_TEST_FAULT=AFTER_TURN_END)
    turn = http.post(turns, json=_ask("hi")).json()
    assert turn["status"] == "completed" and turn["output_message"]["content"] == "written once "
    assert processes.worker is not None and processes.worker.wait(timeout=30) != 0
    return turns, str(turn["turn_id"])


def _outcome(processes: ProcessStack, turn_id: str, cancel: bool = False) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        handle = (await processes.temporal_client()).get_workflow_handle(turn_workflow_id(turn_id))
        if cancel:
            await handle.cancel()
        processes.start_worker()
        return await handle.result()

    return asyncio.run(run())


def _final_events(http: httpx.Client, turns: str, turn_id: str) -> list[str]:
    events = [body for _, body in sse_events(http.get(f"{turns}/{turn_id}/events"))]
    return [e["event"]["payload"]["event_type"] if "event" in e else "error" for e in events if "runtime" not in e]


def _completed_once(http: httpx.Client, turns: str, turn_id: str) -> list[str]:
    """The turn as its first model call ended it, with one end in its events; the events' kinds."""
    turn = http.get(f"{turns}/{turn_id}").json()
    assert turn["status"] == "completed" and turn["output_message"]["content"] == "written once "
    assert turn["error"] is None
    events = _final_events(http, turns, turn_id)
    assert events.count("turn_complete") == 1 and "error" not in events
    return events


def test_a_model_call_whose_worker_died_after_writing_the_turns_end_is_not_made_again(
    processes: ProcessStack, http: httpx.Client
) -> None:
    turns, turn_id = _ended_by_a_worker_that_then_died(processes, http)

    outcome = _outcome(processes, turn_id)

    assert outcome["status"] == "completed" and outcome["steps"] == 1
    assert len(processes.model.requests) == 1
    assert _completed_once(http, turns, turn_id)[-2:] == ["step_complete", "turn_complete"]


def test_a_cancel_meeting_a_turn_its_model_call_ended_leaves_it_completed(
    processes: ProcessStack, http: httpx.Client
) -> None:
    turns, turn_id = _ended_by_a_worker_that_then_died(processes, http)
    assert http.post(f"{turns}/{turn_id}/cancel").status_code == 409  # the API reads the store: completed

    outcome = _outcome(processes, turn_id, cancel=True)  # the workflow has not recorded the end yet

    assert outcome["status"] == "completed" and outcome["steps"] == 1 and outcome["error"] is None
    _completed_once(http, turns, turn_id)


def test_worker_killed_during_a_server_tool_call(processes: ProcessStack, http: httpx.Client) -> None:
    with mcp_server.registered_toolgroup(http) as toolgroup:
        call = ("wait_then_echo", {"seconds": 3, "text": "echoed"})
        processes.model.script(Reply(tool_calls=[call]), text("after the tool"))
        agent_id = create_agent(http, toolgroups=[toolgroup], client_tools=[])
        turns = f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"
        mcp_server.STARTED.clear()
        thread, results = _in_background(lambda: http.post(turns, json=_ask("use it")))
        deadline = time.monotonic() + EVENT_SECONDS
        while "wait_then_echo" not in mcp_server.STARTED:
            assert time.monotonic() < deadline, "the tool call never started"
            time.sleep(0.05)

        processes.kill(processes.worker)
        processes.start_worker()
        thread.join(timeout=120)

    turn = results[0].json()
    assert turn["status"] == "completed", turn
    assert [s["step_type"] for s in turn["steps"]] == ["inference", "tool_execution", "inference"]
    assert turn["steps"][1]["tool_responses"][0]["content"] == "echoed"
    assert mcp_server.STARTED == ["wait_then_echo", "wait_then_echo"]  # the call was retried


def test_worker_killed_while_the_turn_awaits_input(processes: ProcessStack, http: httpx.Client) -> None:
    processes.model.script(tool_call("get_boiling_point", {"liquid_name": "x"}), text("after the crash"))
    turns = _turns(http)
    paused = final_turn(http.post(turns, json=_ask("go", stream=True)))

    processes.kill(processes.worker)
    processes.start_worker()

    call = paused["output_message"]["tool_calls"][0]
    answer = {"tool_responses": [{"call_id": call["call_id"], "tool_name": call["tool_name"], "content": "7"}]}
    turn = http.post(f"{turns}/{paused['turn_id']}/resume", json=answer).json()
    assert turn["status"] == "completed"
    assert [s["step_type"] for s in turn["steps"]] == ["inference", "tool_execution", "inference"]


def test_resume_sent_while_no_worker_runs_goes_through_once_one_does(
    processes: ProcessStack, http: httpx.Client
) -> None:
    processes.model.script(tool_call("get_boiling_point", {"liquid_name": "x"}), text("resumed late"))
    turns = _turns(http)
    paused = final_turn(http.post(turns, json=_ask("go", stream=True)))
    processes.kill(processes.worker)

    call = paused["output_message"]["tool_calls"][0]
    answer = {"tool_responses": [{"call_id": call["call_id"], "tool_name": call["tool_name"], "content": "7"}]}
    thread, results = _in_background(lambda: http.post(f"{turns}/{paused['turn_id']}/resume", json=answer))
    time.sleep(3)
    processes.start_worker()
    thread.join(timeout=120)

    assert results[0].status_code == 200, results[0].text
    turn = results[0].json()
    assert turn["output_message"]["content"] == "resumed late "
    assert [s["step_type"] for s in turn["steps"]] == ["inference", "tool_execution", "inference"]


def test_api_killed_mid_stream_then_the_client_resumes_from_its_last_event(
    processes: ProcessStack, http: httpx.Client
) -> None:
    words = " ".join(f"w{i}" for i in range(40))
    processes.model.script(text(words, token_delay_seconds=0.05))
    turns = _turns(http)
    seen: list[tuple[int, str]] = []
    with pytest.raises(httpx.HTTPError), http.stream("POST", turns, json=_ask("talk", stream=True)) as stream:
        for line in stream.iter_lines():
            if line.startswith("id: "):
                event_id = int(line[4:])
            elif line.startswith("data: "):
                seen.append((event_id, line[6:]))
                if len(seen) == 5:
                    processes.kill(processes.api)
    processes.start_api()
    turn_id = None
    for _, data in seen:
        if '"turn_id"' in data:
            turn_id = data.split('"turn_id":"', 1)[1].split('"', 1)[0]
            break
    turn_id = turn_id or http.get(turns.rsplit("/turn", 1)[0]).json()["turns"][0]["turn_id"]

    rest = sse_events(http.get(f"{turns}/{turn_id}/events", headers={"Last-Event-ID": str(seen[-1][0])}))

    everything = sse_events(http.get(f"{turns}/{turn_id}/events"))
    got = [event_id for event_id, _ in seen] + [event_id for event_id, _ in rest]
    assert got == [event_id for event_id, _ in everything]
    assert len(got) == len(set(got))
    assert rest[-1][1]["event"]["payload"]["event_type"] == "turn_complete"
    text_out = "".join(
        body["event"]["payload"]["delta"]["text"]
        for _, body in everything
        if body["event"]["payload"]["event_type"] == "step_progress"
    )
    assert text_out == words + " "


def test_temporal_killed_and_restarted_on_its_database_mid_turn(processes: ProcessStack, http: httpx.Client) -> None:
    processes.model.script(text("survived", delay_seconds=2))
    turns = _turns(http)
    thread, results = _in_background(lambda: http.post(turns, json=_ask("hi")))
    processes.wait_for_model_requests(1)

    processes.kill(processes.temporal)
    time.sleep(1)
    processes.start_temporal()
    thread.join(timeout=120)

    turn = results[0].json()
    assert turn["status"] == "completed", turn
    assert turn["output_message"]["content"] == "survived "
    assert [s["step_type"] for s in turn["steps"]] == ["inference"]
