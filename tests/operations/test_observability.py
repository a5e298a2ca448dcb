"""Tracing, metrics, logs and readiness, seen from outside: the worker and the API run as real
processes configured only by environment variables, traces go to a real OTLP/HTTP receiver,
metrics are scraped over HTTP, logs are read from the processes' output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.otlp_receiver import OtlpReceiver, ReceivedSpan
from tests.support.processes import EVENT_SECONDS, ROOT, ProcessStack
from tests.support.rest import BOILING_TOOL, create_agent, create_session
from tests.support.scripted_model import text, tool_call
from tests.support.stack import SCRIPTED_MODEL, free_port

pytestmark = pytest.mark.processes

SERVER, CLIENT = 2, 3  # OTLP span kinds
TURN_ID, SESSION_ID, AGENT_ID = "durable_agents.turn_id", "durable_agents.session_id", "durable_agents.agent_id"
CREATE_SPAN = "POST /v1/agents/{agent_id}/session/{session_id}/turn"
RESUME_SPAN = "POST /v1/agents/{agent_id}/session/{session_id}/turn/{turn_id}/resume"


@dataclass
class Observed:
    stack: ProcessStack
    receiver: OtlpReceiver
    logs: Path
    worker_metrics_url: str


@dataclass(frozen=True)
class ClientToolTurn:
    agent_id: str
    session_id: str
    turn_id: str


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Observed]:
    receiver = OtlpReceiver()
    logs = Path(tmp_path_factory.mktemp("observability-logs"))
    metrics_port = free_port()
    stack = ProcessStack(
        Path(tmp_path_factory.mktemp("observability")),
        extra_env={
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            "DA_LOG_FORMAT": "json",
            "DA_WORKER_METRICS_PORT": str(metrics_port),
        },
        log_dir=logs,
    )
    try:
        yield Observed(stack, receiver, logs, f"http://127.0.0.1:{metrics_port}/metrics")
    finally:
        stack.close()
        receiver.close()


@pytest.fixture(scope="module")
def http(observed: Observed) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=observed.stack.url, timeout=60) as client:
        yield client


def _ask(content: str) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": content}], "stream": False}


def _pause(http: httpx.Client, agent_id: str, session_id: str) -> dict[str, object]:
    paused = http.post(f"/v1/agents/{agent_id}/session/{session_id}/turn", json=_ask("boiling point of water?"))
    assert paused.status_code == 200, paused.text
    assert paused.json()["status"] == "awaiting_input"
    return paused.json()


def _resume(http: httpx.Client, agent_id: str, session_id: str, paused: dict[str, object]) -> dict[str, object]:
    call = paused["steps"][-1]["model_response"]["tool_calls"][0]  # type: ignore[index]
    resumed = http.post(
        f"/v1/agents/{agent_id}/session/{session_id}/turn/{paused['turn_id']}/resume",
        json={"tool_responses": [{"call_id": call["call_id"], "tool_name": call["tool_name"], "content": "100 C"}]},
    )
    assert resumed.status_code == 200, resumed.text
    assert resumed.json()["status"] == "completed"
    return resumed.json()


@pytest.fixture(scope="module")
def client_tool_turn(observed: Observed, http: httpx.Client) -> ClientToolTurn:
    """One turn that pauses for a client tool and is resumed: create → inference → pause → resume → inference."""
    observed.stack.model.script(tool_call(BOILING_TOOL["name"], {"liquid_name": "water"}), text("It boils at 100 C."))
    agent_id = create_agent(http)
    session_id = create_session(http, agent_id)
    paused = _pause(http, agent_id, session_id)
    _resume(http, agent_id, session_id, paused)
    return ClientToolTurn(agent_id, session_id, str(paused["turn_id"]))


def _children(spans: list[ReceivedSpan], parent: ReceivedSpan, name: str | None = None) -> list[ReceivedSpan]:
    return [s for s in spans if s.parent_span_id == parent.span_id and (name is None or s.name == name)]


def _one(spans: list[ReceivedSpan], name: str) -> ReceivedSpan:
    found = [span for span in spans if span.name == name]
    assert len(found) == 1, f"{len(found)} spans named {name!r}"
    return found[0]


def _ancestors(spans: list[ReceivedSpan], span: ReceivedSpan) -> list[str]:
    by_id = {s.span_id: s for s in spans}
    names = []
    while span.parent_span_id in by_id:
        span = by_id[span.parent_span_id]
        names.append(span.name)
    return names


def _tree(spans: list[ReceivedSpan]) -> str:
    """The trace as indented lines, for failure messages."""
    ids = {span.span_id for span in spans}

    def lines(parent: str, depth: int) -> list[str]:
        found = sorted((s for s in spans if s.parent_span_id == parent), key=lambda s: s.start_ns)
        return [f"{'  ' * depth}{s.name} [{s.service}]" + "\n" + "".join(lines(s.span_id, depth + 1)) for s in found]

    roots = sorted({s.parent_span_id for s in spans if s.parent_span_id not in ids})
    return "\n" + "".join(line for root in roots for line in lines(root, 0))


def test_a_client_tool_turn_is_one_trace_from_request_to_model_calls(
    observed: Observed, client_tool_turn: ClientToolTurn
) -> None:
    turn = client_tool_turn

    def complete(spans: list[ReceivedSpan]) -> bool:
        ours = [s for s in spans if s.attributes.get(TURN_ID) == turn.turn_id]
        names = [s.name for s in ours]
        traces = {s.trace_id for s in ours if s.name == CREATE_SPAN}
        # The run closes a moment after its last inference has stored the turn's end.
        closed = any(s.name == "CompleteWorkflow:AgentTurn" and s.trace_id in traces for s in spans)
        return (
            closed
            and names.count("RunActivity:infer") == 2
            and RESUME_SPAN in names
            and "HandleUpdate:submit_tool_responses" in names
            and sum(s.kind == CLIENT and s.service == "durable-agents-worker" for s in ours) >= 2
        )

    received = observed.receiver.wait_for(complete, "the turn's spans")
    create = next(s for s in received if s.name == CREATE_SPAN and s.attributes.get(TURN_ID) == turn.turn_id)
    spans = [s for s in received if s.trace_id == create.trace_id]
    assert all(s.trace_id == create.trace_id for s in received if s.attributes.get(TURN_ID) == turn.turn_id)

    # API request → workflow start → the workflow's run, and each inference → the model's HTTP request.
    # (Temporal's interceptor hangs what the workflow does beside its zero-length run span, under the start.)
    assert create.service == "durable-agents-api" and create.kind == SERVER and create.parent_span_id == ""
    start = _one(_children(spans, create), "StartWorkflow:AgentTurn")
    run = _one(_children(spans, start), "RunWorkflow:AgentTurn")
    assert run.service == "durable-agents-worker"
    inferences = [
        activity
        for scheduled in _children(spans, start, "StartActivity:infer")
        for activity in _children(spans, scheduled, "RunActivity:infer")
    ]
    assert len(inferences) == 2, _tree(spans)
    for inference in inferences:
        model_requests = [s for s in _children(spans, inference) if s.kind == CLIENT]
        assert len(model_requests) == 1, "each inference makes one HTTP request to the model"
        assert model_requests[0].attributes["url.full"] == f"{observed.stack.model_url}/v1/chat/completions"
    _one(_children(spans, start), "CompleteWorkflow:AgentTurn")

    # The resume is its own HTTP request, yet part of the turn's trace, under the create request; the
    # workflow's handling of the update it sends links to it, and the second inference follows.
    resume = _one(spans, RESUME_SPAN)
    assert resume.kind == SERVER and resume.parent_span_id == create.span_id, _tree(spans)
    update = _one(_children(spans, resume), "StartWorkflowUpdate:submit_tool_responses")
    handled = _one(_children(spans, start), "HandleUpdate:submit_tool_responses")
    assert (update.trace_id, update.span_id) in handled.links
    first, second = sorted(inferences, key=lambda s: s.start_ns)
    assert first.start_ns < handled.start_ns < second.start_ns

    ids = {TURN_ID: turn.turn_id, SESSION_ID: turn.session_id, AGENT_ID: turn.agent_id}
    for span in [create, run, *inferences, resume, update, handled]:
        assert {key: span.attributes.get(key) for key in ids} == ids, span.name


def _scrape(url: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    response = httpx.get(url, timeout=10)
    assert response.status_code == 200, response.text
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    return samples


def _value(samples: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str) -> float:
    matching = [value for found, value in samples.get(name, []) if all(found.get(k) == v for k, v in labels.items())]
    assert matching, f"no sample {name}{labels}; names: {sorted(samples)}"
    return sum(matching)


Samples = dict[str, list[tuple[dict[str, str], float]]]


def _scrape_until(url: str, name: str, at_least: float, seconds: float = EVENT_SECONDS) -> Samples:
    """The samples once `name` has reached `at_least` (polled), or as they are after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        samples = _scrape(url)
        if sum(value for _, value in samples.get(name, [])) >= at_least or time.monotonic() > deadline:
            return samples
        time.sleep(0.2)


def test_metrics_count_turns_model_calls_tools_and_tokens(
    observed: Observed, http: httpx.Client, client_tool_turn: ClientToolTurn
) -> None:
    api_metrics = f"{observed.stack.url}/metrics"
    assert _value(_scrape(api_metrics), "durable_agents_turns_awaiting_input") == 0

    # A turn paused now is counted from the store, whichever process paused it.
    observed.stack.model.script(
        tool_call(BOILING_TOOL["name"], {"liquid_name": "water"}),
        text("Done."),
    )
    agent_id = create_agent(http, toolgroups=["builtin::calculator"])
    session_id = create_session(http, agent_id)
    paused = _pause(http, agent_id, session_id)
    assert _value(_scrape(api_metrics), "durable_agents_turns_awaiting_input") == 1
    _resume(http, agent_id, session_id, paused)
    api = _scrape(api_metrics)
    assert _value(api, "durable_agents_turns_awaiting_input") == 0
    assert _value(api, "durable_agents_turns_started_total") >= 2

    # Server-side tool calls: one answers, one fails.
    observed.stack.model.script(
        tool_call("calculate", {"expression": "2 + 3"}), tool_call("calculate", {"expression": "2 +"}), text("5")
    )
    done = http.post(f"/v1/agents/{agent_id}/session/{session_id}/turn", json=_ask("add"))
    assert done.json()["status"] == "completed", done.text

    # The answer comes as the turn's end is stored; its workflow completes a moment later, and the SDK
    # counts it then: on a loaded machine, after the answer.
    worker = _scrape_until(observed.worker_metrics_url, "temporal_workflow_completed_total", 3)
    assert _value(worker, "durable_agents_turns_ended_total", status="completed") >= 3
    calls = _value(worker, "durable_agents_model_call_duration_seconds_count", model=SCRIPTED_MODEL, outcome="ok")
    assert calls >= 7
    assert _value(worker, "durable_agents_model_time_to_first_token_seconds_count", model=SCRIPTED_MODEL) == calls
    assert _value(worker, "durable_agents_model_tokens_total", model=SCRIPTED_MODEL, kind="prompt") > 0
    assert _value(worker, "durable_agents_model_tokens_total", model=SCRIPTED_MODEL, kind="completion") > 0
    assert _value(worker, "durable_agents_tool_call_duration_seconds_count", tool="calculate") == 2
    assert _value(worker, "durable_agents_tool_call_errors_total", tool="calculate") == 1
    # The Temporal SDK's own metrics, on the same port, in Prometheus naming.
    assert _value(worker, "temporal_workflow_completed_total") >= 3
    assert any(name.startswith("temporal_activity_execution_latency_seconds") for name in worker)

    ids = {client_tool_turn.turn_id, client_tool_turn.session_id, client_tool_turn.agent_id, agent_id, session_id}
    for samples in (api, worker):
        for name, found in samples.items():
            for labels, _ in found:
                assert not ids & set(labels.values()), f"{name} has an id in its labels: {labels}"


def _log_lines(path: Path) -> list[dict[str, object]]:
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except ValueError:
            pytest.fail(f"{path.name} has a line that is not JSON: {line!r}")
    return parsed


def test_each_turn_state_change_is_one_json_log_line_with_its_ids(
    observed: Observed, client_tool_turn: ClientToolTurn
) -> None:
    turn = client_tool_turn
    changes = []
    for name in ("api.log", "worker.log"):
        for line in _log_lines(observed.logs / name):
            if line.get("turn_id") == turn.turn_id and "status" in line:
                assert line["session_id"] == turn.session_id and line["agent_id"] == turn.agent_id, line
                assert line["level"] == "info" and turn.turn_id in str(line["message"])
                changes.append((line["process"], line["status"]))
    assert changes == [
        ("api", "running"),
        ("worker", "awaiting_input"),
        ("worker", "running"),
        ("worker", "completed"),
    ]


def test_tracing_costs_nothing_unless_an_exporter_is_configured() -> None:
    """No tracing SDK, instrumentation or interceptor is even imported unless an exporter is configured."""
    probe = (
        "import sys, api.app, worker; "
        "print(sorted({m for m in sys.modules if m.startswith(('opentelemetry.sdk', 'opentelemetry.instrumentation', "
        "'temporalio.contrib.opentelemetry', 'observability.httpx2_tracing'))}))"
    )
    base = {key: value for key, value in os.environ.items() if not key.startswith("OTEL_")}

    def loaded(**env: str) -> list[str]:
        result = subprocess.run(
            [sys.executable, "-c", probe], cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout.strip().replace("'", '"'))

    assert loaded() == []
    assert loaded(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9", OTEL_SDK_DISABLED="true") == []
    assert loaded(OTEL_TRACES_EXPORTER="none") == []
    assert "opentelemetry.sdk" in loaded(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9")


def test_readiness_names_what_does_not_answer_and_liveness_stays_up(observed: Observed) -> None:
    """Last in this module: it stops the Temporal server."""
    url = observed.stack.url
    ready = httpx.get(f"{url}/readyz", timeout=10)
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready", "checks": {"store": "ok", "temporal": "ok", "streams": "ok"}}

    observed.stack.kill(observed.stack.temporal)
    not_ready = httpx.get(f"{url}/readyz", timeout=10)
    assert not_ready.status_code == 503
    assert not_ready.json() == {
        "status": "not ready",
        "checks": {"store": "ok", "temporal": "unavailable", "streams": "ok"},
        "detail": "Not ready: Temporal does not answer. Retry later.",
    }
    alive = httpx.get(f"{url}/v1/health", timeout=10)
    assert alive.status_code == 200 and alive.json() == {"status": "OK"}
    # The reason is in the API's log, for the operator, not in the answer.
    assert any(
        line.get("message") == "readiness: Temporal does not answer" and "exception" in line
        for line in _log_lines(observed.logs / "api.log")
    )
