"""An operator resumes a paused turn with `temporal workflow signal` — the real CLI, as the README
shows it — and a signal that does not fit the pause changes nothing but says why in the turn's
current details."""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

import httpx

from serve import temporal_binary
from tests.support.processes import EVENT_SECONDS
from tests.support.rest import create_agent, create_session, final_turn
from tests.support.scripted_model import ScriptedModel, text, tool_call
from tests.support.stack import Stack
from workflows.contracts import TOOL_RESPONSES_SIGNAL, turn_workflow_id


def _temporal(stack: Stack, *args: str) -> str:
    """Run the `temporal` CLI against the test's dev server; its stdout."""
    address = stack.client.service_client.config.target_host
    done = subprocess.run(
        [temporal_binary(), *args, "--address", address], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, f"temporal {' '.join(args)} failed: {done.stderr}"
    return done.stdout


def _signal(stack: Stack, turn_id: str, payload: str) -> None:
    _temporal(
        stack,
        "workflow",
        "signal",
        "--workflow-id",
        turn_workflow_id(turn_id),
        "--name",
        TOOL_RESPONSES_SIGNAL,
        "--input",
        payload,
    )


def _current_details(stack: Stack, turn_id: str) -> str:
    out = _temporal(stack, "workflow", "metadata", "--workflow-id", turn_workflow_id(turn_id), "-o", "json")
    return json.loads(out)["queryResult"][0]["currentDetails"]


def _paused_turn(http: httpx.Client) -> tuple[str, dict[str, Any]]:
    agent_id = create_agent(http)
    turns = f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"
    paused = final_turn(http.post(turns, json={"messages": [{"role": "user", "content": "boil"}], "stream": True}))
    assert paused["status"] == "awaiting_input"
    return f"{turns}/{paused['turn_id']}", paused


def _wait_for_status(http: httpx.Client, turn_url: str, status: str) -> dict[str, Any]:
    deadline = time.monotonic() + EVENT_SECONDS
    while True:
        turn = http.get(turn_url).json()
        if turn["status"] == status:
            return turn
        assert time.monotonic() < deadline, f"the turn is {turn['status']}, not {status}"
        time.sleep(0.1)


def test_a_signal_from_the_cli_resumes_the_paused_turn(stack: Stack, http: httpx.Client, model: ScriptedModel) -> None:
    model.script(tool_call("get_boiling_point", {"liquid_name": "tea"}), text("tea boils at 100"))
    turn_url, paused = _paused_turn(http)
    call = paused["output_message"]["tool_calls"][0]
    results = {"tool_responses": [{"call_id": call["call_id"], "tool_name": call["tool_name"], "content": "100 C"}]}

    _signal(stack, paused["turn_id"], json.dumps(results))

    turn = _wait_for_status(http, turn_url, "completed")
    assert turn["output_message"]["content"] == "tea boils at 100 "
    assert [s["step_type"] for s in turn["steps"]] == ["inference", "tool_execution", "inference"]
    assert turn["steps"][1]["tool_responses"][0]["content"] == "100 C"
    assert model.requests[-1]["messages"][-1]["content"] == "100 C"
    # The API's own resume now finds nothing to resume: the signal was the resume.
    assert http.post(f"{turn_url}/resume", json=results).status_code == 409


def test_a_signal_that_does_not_fit_changes_nothing_and_says_why(
    stack: Stack, http: httpx.Client, model: ScriptedModel
) -> None:
    model.script(tool_call("get_boiling_point", {"liquid_name": "tea"}), text("resumed properly"))
    turn_url, paused = _paused_turn(http)
    call = paused["output_message"]["tool_calls"][0]

    wrong = {"tool_responses": [{"call_id": "not-a-pending-call", "tool_name": call["tool_name"], "content": "1"}]}
    _signal(stack, paused["turn_id"], json.dumps(wrong))
    details = _current_details(stack, paused["turn_id"])
    assert "**Last signal ignored:**" in details, details
    assert call["call_id"] in details.split("**Last signal ignored:**")[1]
    assert "not-a-pending-call" in details

    _signal(stack, paused["turn_id"], '{"responses": "not the right shape"}')
    details = _current_details(stack, paused["turn_id"])
    assert '**Last signal ignored:** its input is not {"tool_responses"' in details, details

    # Nothing changed: still paused, same steps, nothing written, and the API resumes it as usual.
    time.sleep(0.5)
    turn = http.get(turn_url).json()
    assert turn["status"] == "awaiting_input"
    assert [s["step_type"] for s in turn["steps"]] == ["inference"]
    assert len(model.requests) == 1
    right = {"tool_responses": [{"call_id": call["call_id"], "tool_name": call["tool_name"], "content": "7"}]}
    done = http.post(f"{turn_url}/resume", json=right)
    assert done.status_code == 200, done.text
    assert done.json()["output_message"]["content"] == "resumed properly "
    assert "Last signal ignored" not in _current_details(stack, paused["turn_id"])
