"""A provider's API key is read by the worker when it calls the model, and appears nowhere else:
not in workflow inputs or history, not in logs, not in any API response."""

from __future__ import annotations

import logging

import httpx
import pytest

from tests.support.rest import create_agent, create_session, final_turn
from tests.support.scripted_model import ScriptedModel, failure, text, tool_call
from tests.support.stack import SCRIPTED_KEY, Stack
from workflows.contracts import turn_workflow_id

QUESTION = "What boils at one hundred degrees?"
# The root, and loggers whose libraries set their own level (uvicorn's access log, SQLAlchemy's statements).
LOGGERS = ["", "uvicorn", "uvicorn.access", "uvicorn.error", "httpx", "httpcore", "openai", "temporalio", "sqlalchemy"]


def test_the_provider_key_is_absent_from_history_logs_and_responses(
    stack: Stack, model: ScriptedModel, caplog: pytest.LogCaptureFixture
) -> None:
    for name in LOGGERS:
        caplog.set_level(logging.DEBUG, logger=name)
    model.script(tool_call("get_boiling_point", {"liquid_name": "water"}), text("Water does."))

    with httpx.Client(base_url=stack.base_url, timeout=60) as http:
        agent_id = create_agent(http)
        session_id = create_session(http, agent_id)
        turns = f"/v1/agents/{agent_id}/session/{session_id}/turn"
        created = http.post(turns, json={"messages": [{"role": "user", "content": QUESTION}], "stream": True})
        paused = final_turn(created)
        turn_id = paused["turn_id"]
        call = paused["output_message"]["tool_calls"][0]
        answer = {"call_id": call["call_id"], "tool_name": call["tool_name"], "content": "100"}
        resumed = http.post(f"{turns}/{turn_id}/resume", json={"tool_responses": [answer], "stream": True})
        turn = final_turn(resumed)
        responses = [
            created,
            resumed,
            http.get(f"/v1/agents/{agent_id}"),
            http.get("/v1/agents"),
            http.get(f"/v1/agents/{agent_id}/session/{session_id}"),
            http.get(f"/v1/agents/{agent_id}/sessions"),
            http.get(f"{turns}/{turn_id}"),
            http.get(f"{turns}/{turn_id}/step/{turn['steps'][0]['step_id']}"),
            http.get(f"{turns}/{turn_id}/events"),
        ]
    history = stack.closed_history(turn_workflow_id(turn_id))

    key = SCRIPTED_KEY.encode()
    # The key was really used: the worker sent it to the model with both calls.
    assert turn["output_message"]["content"] == "Water does. "
    assert model.authorizations == [f"Bearer {SCRIPTED_KEY}"] * 2

    events = [event.SerializeToString() for event in history.events]
    assert any(QUESTION.encode() in event for event in events)  # the search does see payloads
    assert not [index for index, event in enumerate(events) if key in event]
    assert SCRIPTED_KEY not in history.to_json()

    for response in responses:
        assert response.status_code == 200, response.request.url
        assert key not in response.content, response.request.url
        assert not [name for name, value in response.headers.items() if SCRIPTED_KEY in value]

    logged = [record for record in caplog.records if record.name.startswith(("openai", "httpx", "httpcore"))]
    assert any("/v1/chat/completions" in record.getMessage() for record in logged)  # the model calls were logged
    leaking = [record for record in caplog.records if SCRIPTED_KEY in _rendered(record)]
    assert not leaking, [f"{record.name}: {_rendered(record)[:300]}" for record in leaking]


def test_a_provider_that_quotes_the_key_in_its_error_does_not_leak_it(stack: Stack, model: ScriptedModel) -> None:
    model.script(failure(401, echo_key=True))
    with httpx.Client(base_url=stack.base_url, timeout=60) as http:
        agent_id = create_agent(http)
        session = f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}"
        created = http.post(
            f"{session}/turn", json={"messages": [{"role": "user", "content": QUESTION}], "stream": True}
        )
        turn_id = http.get(session).json()["turns"][0]["turn_id"]
        stored = http.get(f"{session}/turn/{turn_id}")
    history = stack.closed_history(turn_workflow_id(turn_id))

    assert model.authorizations == [f"Bearer {SCRIPTED_KEY}"]  # the provider was sent the key, and quoted it
    error = stored.json()["error"]
    assert stored.json()["status"] == "failed" and "HTTP 401" in error and "incorrect API key provided" in error
    assert "[redacted]" in error and SCRIPTED_KEY not in error
    assert SCRIPTED_KEY not in created.text
    assert SCRIPTED_KEY not in history.to_json()


def test_a_retried_provider_failure_that_quotes_the_key_is_recorded_without_it(
    stack: Stack, model: ScriptedModel
) -> None:
    model.script(failure(503, echo_key=True), text("Water does."))
    with httpx.Client(base_url=stack.base_url, timeout=60) as http:
        agent_id = create_agent(http)
        turns = f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"
        turn = final_turn(http.post(turns, json={"messages": [{"role": "user", "content": QUESTION}], "stream": True}))
    # The retried attempt's start event is written only with its completion, which can follow the stream's end.
    history = stack.closed_history(turn_workflow_id(turn["turn_id"]))

    assert turn["status"] == "completed" and len(model.authorizations) == 2
    # The failed attempt is in history (the retry's start event carries it), without the key.
    assert "HTTP 503" in history.to_json() and "[redacted]" in history.to_json()
    assert SCRIPTED_KEY not in history.to_json()


def _rendered(record: logging.LogRecord) -> str:
    """Everything a handler could write for the record, arguments and traceback included."""
    return " ".join(
        [record.getMessage(), repr(record.args), str(record.exc_info or ""), *map(repr, record.__dict__.values())]
    )
