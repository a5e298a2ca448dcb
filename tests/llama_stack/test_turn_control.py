"""Stopping, expiring and retrying turns: cancel, awaiting-input expiry, idempotent create and resume."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import httpx

from tests.support.processes import EVENT_SECONDS, wait_until
from tests.support.rest import create_agent, create_session, final_turn, sse_events
from tests.support.scripted_model import ScriptedModel, text, tool_call
from tests.support.stack import Stack


def _turns(http: httpx.Client) -> str:
    agent_id = create_agent(http)
    return f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"


def _ask(content: str, stream: bool = True) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": content}], "stream": stream}


def _answer(turn: dict, content: str = "42") -> dict[str, object]:
    call = turn["output_message"]["tool_calls"][0]
    return {"tool_responses": [{"call_id": call["call_id"], "tool_name": call["tool_name"], "content": content}]}


def test_cancel_interrupts_the_model_call_keeps_steps_and_frees_the_session(
    http: httpx.Client, model: ScriptedModel
) -> None:
    model.script(tool_call("get_boiling_point", {"liquid_name": "x"}), text("too slow", delay_seconds=60))
    turns = _turns(http)
    paused = final_turn(http.post(turns, json=_ask("go")))
    streamed: list[httpx.Response] = []
    resumer = threading.Thread(
        target=lambda: streamed.append(
            http.post(f"{turns}/{paused['turn_id']}/resume", json=_answer(paused) | {"stream": True})
        )
    )
    resumer.start()
    while len(model.requests) < 2:  # the slow second model call has begun
        time.sleep(0.05)

    started = time.monotonic()
    cancelled = http.post(f"{turns}/{paused['turn_id']}/cancel")
    elapsed = time.monotonic() - started
    resumer.join(timeout=30)

    assert cancelled.status_code == 200, cancelled.text
    turn = cancelled.json()
    assert turn["status"] == "cancelled"
    assert turn["error"] == f"Turn {paused['turn_id']} was cancelled."
    assert [s["step_type"] for s in turn["steps"]] == ["inference", "tool_execution"]
    assert elapsed < 10, f"cancellation took {elapsed:.1f}s"
    last = sse_events(streamed[0])[-1][1]
    assert last == {"error": {"message": f"Turn {paused['turn_id']} was cancelled."}}
    assert http.post(f"{turns}/{paused['turn_id']}/cancel").status_code == 409
    model.script(text("fresh"))
    assert http.post(turns, json=_ask("next", stream=False)).json()["output_message"]["content"] == "fresh "


def test_cancel_a_paused_turn_then_a_late_resume_is_409(http: httpx.Client, model: ScriptedModel) -> None:
    model.script(tool_call("get_boiling_point", {"liquid_name": "x"}))
    turns = _turns(http)
    paused = final_turn(http.post(turns, json=_ask("go")))

    cancelled = http.post(f"{turns}/{paused['turn_id']}/cancel").json()

    assert cancelled["status"] == "cancelled"
    assert cancelled["output_message"] is None
    late = http.post(f"{turns}/{paused['turn_id']}/resume", json=_answer(paused))
    assert late.status_code == 409
    assert "cancelled" in late.json()["detail"]


def test_a_paused_turn_expires_and_a_late_resume_is_410(stack: Stack, model: ScriptedModel) -> None:
    model.script(tool_call("get_boiling_point", {"liquid_name": "x"}))
    expiring = stack.settings.model_copy(update={"awaiting_input_timeout": timedelta(seconds=1)})
    with stack.other_api(expiring) as url, httpx.Client(base_url=url, timeout=30) as http:
        turns = _turns(http)
        paused = final_turn(http.post(turns, json=_ask("go")))
        deadline = time.monotonic() + EVENT_SECONDS
        while http.get(f"{turns}/{paused['turn_id']}").json()["status"] != "expired":
            assert time.monotonic() < deadline, "the turn did not expire"
            time.sleep(0.2)

        late = http.post(f"{turns}/{paused['turn_id']}/resume", json=_answer(paused))
        assert late.status_code == 410
        assert "expired" in late.json()["detail"]
        pause_id = sse_events(http.get(f"{turns}/{paused['turn_id']}/events"))[-1][0]
        rest = sse_events(http.get(f"{turns}/{paused['turn_id']}/events", headers={"Last-Event-ID": str(pause_id)}))
        assert "expired: no client tool results within 0:00:01" in rest[-1][1]["error"]["message"]


def test_a_paused_turn_resumes_after_a_wait_short_of_its_expiry(stack: Stack, model: ScriptedModel) -> None:
    """The days-long wait, shortened: a timer is armed while the turn waits, and a resume before it
    fires continues the turn (the timer then never fires)."""
    model.script(tool_call("get_boiling_point", {"liquid_name": "x"}), text("worth the wait"))
    expiry = 8  # seconds: on a loaded machine the resume, sent after 2, can take a few to reach the workflow
    patient = stack.settings.model_copy(update={"awaiting_input_timeout": timedelta(seconds=expiry)})
    with stack.other_api(patient) as url, httpx.Client(base_url=url, timeout=30) as http:
        turns = _turns(http)
        paused = final_turn(http.post(turns, json=_ask("go")))
        paused_at = time.monotonic()
        time.sleep(2)
        done = http.post(f"{turns}/{paused['turn_id']}/resume", json=_answer(paused)).json()
        time.sleep(max(0.0, paused_at + expiry + 1 - time.monotonic()))  # past the original expiry
        later = http.get(f"{turns}/{paused['turn_id']}").json()

    assert done["status"] == "completed" and done["output_message"]["content"] == "worth the wait "
    assert later["status"] == "completed"


def test_a_resumed_turn_reads_as_running_while_the_model_works(http: httpx.Client, model: ScriptedModel) -> None:
    working = threading.Event()  # the model answers once the turn has been read while it works
    model.script(tool_call("get_boiling_point", {"liquid_name": "x"}), text("slowly", held_until=working))
    turns = _turns(http)
    paused = final_turn(http.post(turns, json=_ask("go")))
    thread = threading.Thread(target=lambda: http.post(f"{turns}/{paused['turn_id']}/resume", json=_answer(paused)))
    thread.start()
    try:
        wait_until(lambda: len(model.requests) >= 2, "the resumed turn's model call", EVENT_SECONDS)
        during = http.get(f"{turns}/{paused['turn_id']}").json()
        session = http.get(turns.rsplit("/turn", 1)[0]).json()
    finally:
        working.set()
    thread.join(timeout=EVENT_SECONDS)

    assert during["status"] == "running" and during["output_message"] is None
    assert session["turns"][0]["status"] == "running"
    assert [s["step_type"] for s in during["steps"]] == ["inference", "tool_execution"]


def test_the_same_idempotency_key_starts_one_turn(http: httpx.Client, model: ScriptedModel) -> None:
    model.script(text("only once"))
    turns = _turns(http)
    headers = {"Idempotency-Key": "client-retry-1"}

    first = http.post(turns, json=_ask("hi", stream=False), headers=headers)
    retried = http.post(turns, json=_ask("hi", stream=False), headers=headers)
    streamed_retry = http.post(turns, json=_ask("hi"), headers=headers)

    assert first.status_code == retried.status_code == 200
    assert first.json()["turn_id"] == retried.json()["turn_id"] == final_turn(streamed_retry)["turn_id"]
    assert len(model.requests) == 1
    session = http.get(turns.rsplit("/turn", 1)[0]).json()
    assert len(session["turns"]) == 1


def test_a_resume_delivered_twice_continues_the_turn_once(http: httpx.Client, model: ScriptedModel) -> None:
    model.script(tool_call("get_boiling_point", {"liquid_name": "x"}), text("once"))
    turns = _turns(http)
    paused = final_turn(http.post(turns, json=_ask("go")))
    codes: list[int] = []
    barrier = threading.Barrier(2)

    def resume() -> None:
        with httpx.Client(base_url=str(http.base_url), timeout=60) as own:
            barrier.wait()
            codes.append(own.post(f"{turns}/{paused['turn_id']}/resume", json=_answer(paused)).status_code)

    threads = [threading.Thread(target=resume) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(codes) == [200, 409]
    turn = http.get(f"{turns}/{paused['turn_id']}").json()
    assert [s["step_type"] for s in turn["steps"]] == ["inference", "tool_execution", "inference"]
    assert len(model.requests) == 2
