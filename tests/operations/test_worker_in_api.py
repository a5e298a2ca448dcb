"""DA_WORKER_IN_API: one process serves HTTP and runs the turns, each started eagerly on its own worker."""

from __future__ import annotations

import time

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.support.processes import EVENT_SECONDS
from tests.support.rest import create_agent, create_session, final_turn, sse_events
from tests.support.scripted_model import ScriptedModel, text, tool_call
from tests.support.stack import SCRIPTED_MODEL, Stack


def test_an_api_with_its_own_worker_runs_a_client_tool_turn_alone(stack: Stack, model: ScriptedModel) -> None:
    model.script(tool_call("get_boiling_point", {"liquid_name": "water"}), text("Water boils at 100 degrees."))
    # A task queue no other worker polls: the turn can only run on the API process's own worker.
    alone = stack.settings.model_copy(
        update={"worker_in_api": True, "task_queue": f"{stack.settings.task_queue}-in-api"}
    )
    with stack.other_api(alone) as url, httpx.Client(base_url=url, timeout=30) as http:
        agent_id = create_agent(http)
        turns = f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"
        ask = {"messages": [{"role": "user", "content": "How hot?"}], "stream": True}
        paused = final_turn(http.post(turns, json=ask))
        call = paused["output_message"]["tool_calls"][0]
        answer = {"call_id": call["call_id"], "tool_name": call["tool_name"], "content": "100 C"}
        resumed = http.post(f"{turns}/{paused['turn_id']}/resume", json={"tool_responses": [answer], "stream": True})
        sdk_metrics = _temporal_metrics_once_counted(http, workflows=1, activities=2)

    assert paused["status"] == "awaiting_input" and call["tool_name"] == "get_boiling_point"
    events = [data["event"]["payload"] for _, data in sse_events(resumed)]
    deltas = "".join(e["delta"].get("text", "") for e in events if e["event_type"] == "step_progress")
    assert deltas == "Water boils at 100 degrees. "
    done = events[-1]["turn"]
    assert done["status"] == "completed" and done["output_message"]["content"] == "Water boils at 100 degrees. "
    assert [step["step_type"] for step in done["steps"]] == ["inference", "tool_execution", "inference"]
    # Its worker's Temporal SDK metrics are on the API's /metrics, in Prometheus naming.
    assert sdk_metrics["temporal_workflow_completed_total"] >= 1
    assert sdk_metrics["temporal_activity_execution_latency_seconds_count"] >= 2


def test_an_api_with_its_own_worker_asks_the_model_with_what_a_response_and_its_chain_say(
    stack: Stack, model: ScriptedModel
) -> None:
    """The model call of a response this process created is handed the turn's settings, input and prior
    context as written (store/hand_over.py): what it asks must be what the store holds."""
    model.script(text("Paris."), text("About two million."))
    alone = stack.settings.model_copy(
        update={"worker_in_api": True, "task_queue": f"{stack.settings.task_queue}-in-api-responses"}
    )
    with stack.other_api(alone) as url, httpx.Client(base_url=url, timeout=30) as http:
        first = http.post(
            "/v1/responses", json={"model": SCRIPTED_MODEL, "instructions": "Be brief.", "input": "Capital of France?"}
        ).json()
        follow = {"model": SCRIPTED_MODEL, "previous_response_id": first["id"], "input": "How many live there?"}
        second = http.post("/v1/responses", json=follow).json()

    assert first["status"] == "completed" and second["status"] == "completed", (first, second)
    assert second["output"][0]["content"][0]["text"] == "About two million. "
    asked = [[(m["role"], m["content"]) for m in request["messages"]] for request in model.requests]
    assert asked == [
        [("system", "Be brief."), ("user", "Capital of France?")],
        [("user", "Capital of France?"), ("assistant", "Paris. "), ("user", "How many live there?")],
    ]


def _temporal_metrics_once_counted(http: httpx.Client, workflows: int, activities: int) -> dict[str, float]:
    """The API's temporal_* samples (summed over labels) once they count the workflows completed and the activities
    run, or after the suite's event bound: the turn's end reaches the client before its workflow closes, and the
    SDK records an activity's latency after reporting its completion, which can be after the workflow has closed."""
    deadline = time.monotonic() + EVENT_SECONDS
    while True:
        sums: dict[str, float] = {}
        for family in text_string_to_metric_families(http.get("/metrics").text):
            for sample in family.samples:
                if sample.name.startswith("temporal_"):
                    sums[sample.name] = sums.get(sample.name, 0.0) + sample.value
        counted = (
            sums.get("temporal_workflow_completed_total", 0) >= workflows
            and sums.get("temporal_activity_execution_latency_seconds_count", 0) >= activities
        )
        if counted or time.monotonic() > deadline:
            return sums
        time.sleep(0.1)


def test_a_worker_keeps_at_most_its_configured_workflows_and_the_evicted_turns_resume(
    stack: Stack, model: ScriptedModel
) -> None:
    """DA_MAX_CACHED_WORKFLOWS bounds what a worker holds however many turns wait; a paused turn it let go
    replays its history when resumed, and completes as one it kept would."""
    waiting = 3
    model.script(
        *[tool_call("get_boiling_point", {"liquid_name": "water"}) for _ in range(waiting)],
        *[text("Water boils at 100 degrees.") for _ in range(waiting)],
    )
    bounded = stack.settings.model_copy(
        update={
            "worker_in_api": True,
            "task_queue": f"{stack.settings.task_queue}-cache",
            "max_cached_workflows": 1,
        }
    )
    with stack.other_api(bounded) as url, httpx.Client(base_url=url, timeout=30) as http:
        agent_id = create_agent(http)
        ask = {"messages": [{"role": "user", "content": "How hot?"}], "stream": True}
        paused = []
        for _ in range(waiting):
            turns = f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"
            paused.append((turns, final_turn(http.post(turns, json=ask))))
        cached = _temporal_gauge(http, "temporal_sticky_cache_size")
        resumed = []
        for turns, turn in paused:
            call = turn["output_message"]["tool_calls"][0]
            answer = {"call_id": call["call_id"], "tool_name": call["tool_name"], "content": "100 C"}
            body = {"tool_responses": [answer], "stream": True}
            resumed.append(final_turn(http.post(f"{turns}/{turn['turn_id']}/resume", json=body)))

    assert [turn["status"] for _, turn in paused] == ["awaiting_input"] * waiting
    assert cached <= 1
    assert [turn["status"] for turn in resumed] == ["completed"] * waiting
    assert {turn["output_message"]["content"] for turn in resumed} == {"Water boils at 100 degrees. "}


def _temporal_gauge(http: httpx.Client, name: str) -> float:
    """A temporal_* gauge of the API's /metrics once it is reported (the SDK reports it with its next metrics)."""
    deadline = time.monotonic() + EVENT_SECONDS
    while True:
        for family in text_string_to_metric_families(http.get("/metrics").text):
            values = [sample.value for sample in family.samples if sample.name == name]
            if values:
                return sum(values)
        assert time.monotonic() < deadline, f"{name} not reported"
        time.sleep(0.1)
