"""How turns behave at their edges: errors, limits, conflicts, retries — seen over plain HTTP."""

from __future__ import annotations

import httpx

from tests.support.rest import create_agent, create_session, final_turn, sse_events
from tests.support.scripted_model import ScriptedModel, failure, text, tool_call


def _turns(http: httpx.Client, **config: object) -> str:
    agent_id = create_agent(http, **config)
    return f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"


def _ask(content: str, stream: bool = True) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": content}], "stream": stream}


def test_unknown_ids_are_404_naming_the_id(http: httpx.Client) -> None:
    agent_id = create_agent(http)
    session_id = create_session(http, agent_id)
    cases = [
        ("get", "/v1/agents/no-such-agent", "Agent no-such-agent not found"),
        ("get", f"/v1/agents/{agent_id}/session/nope", "Session nope not found"),
        ("get", f"/v1/agents/{agent_id}/session/{session_id}/turn/nope", "Turn nope not found"),
        ("post", "/v1/agents/no-such-agent/session", "Agent no-such-agent not found"),
        ("delete", f"/v1/agents/{agent_id}/session/nope", "Session nope not found"),
    ]
    for method, path, message in cases:
        response = http.request(method, path, json={"session_name": "x"} if method == "post" else None)
        assert response.status_code == 404, path
        assert response.json()["detail"] == message


def test_a_turn_in_a_session_of_another_agent_is_404_and_leaves_that_session_free(http: httpx.Client) -> None:
    agent_id, other_agent = create_agent(http), create_agent(http)
    others_session = create_session(http, other_agent)
    for session_id in (others_session, "no-such-session"):
        refused = http.post(f"/v1/agents/{agent_id}/session/{session_id}/turn", json=_ask("hi", stream=False))
        assert refused.status_code == 404, refused.text
        assert refused.json()["detail"] == f"Session {session_id} not found"
    session = http.get(f"/v1/agents/{other_agent}/session/{others_session}").json()
    assert session["turns"] == []
    answered = http.post(f"/v1/agents/{other_agent}/session/{others_session}/turn", json=_ask("hi", stream=False))
    assert answered.status_code == 200, answered.text
    assert answered.json()["status"] == "completed"


def test_invalid_bodies_are_400_saying_which_field(http: httpx.Client) -> None:
    response = http.post("/v1/agents", json={"agent_config": {"instructions": "x"}})
    assert response.status_code == 400
    assert "agent_config.model: Field required" in response.json()["detail"]

    response = http.post("/v1/agents", json={"agent_config": {"model": "gpt-unknown", "instructions": "x"}})
    assert response.status_code == 400
    assert "Model 'gpt-unknown' is not configured" in response.json()["detail"]

    bad_tool = {"name": "t", "parameters": [{"name": "a", "parameter_type": "complex", "description": ""}]}
    response = http.post(
        "/v1/agents", json={"agent_config": {"model": "offline/echo", "instructions": "", "client_tools": [bad_tool]}}
    )
    assert response.status_code == 400
    assert "unknown parameter_type 'complex'" in response.json()["detail"]

    turns = _turns(http)
    response = http.post(turns, json={"messages": []})
    assert response.status_code == 400
    assert "messages" in response.json()["detail"]


def test_a_second_turn_while_one_awaits_input_is_409_naming_it(http: httpx.Client, model: ScriptedModel) -> None:
    model.script(tool_call("get_boiling_point", {"liquid_name": "x"}), text("done"), text("next"))
    turns = _turns(http)
    paused = final_turn(http.post(turns, json=_ask("first")))

    blocked = http.post(turns, json=_ask("second"))

    assert blocked.status_code == 409
    assert paused["turn_id"] in blocked.json()["detail"] and "awaiting_input" in blocked.json()["detail"]
    call_id = paused["output_message"]["tool_calls"][0]["call_id"]
    response = {"call_id": call_id, "tool_name": "get_boiling_point", "content": "1"}
    http.post(f"{turns}/{paused['turn_id']}/resume", json={"tool_responses": [response]}).raise_for_status()
    assert http.post(turns, json=_ask("second", stream=False)).status_code == 200


def test_resume_is_checked_against_the_pending_calls(http: httpx.Client, model: ScriptedModel) -> None:
    model.script(tool_call("get_boiling_point", {"liquid_name": "x"}), text("done"))
    turns = _turns(http)
    paused = final_turn(http.post(turns, json=_ask("go")))
    resume = f"{turns}/{paused['turn_id']}/resume"
    call_id = paused["output_message"]["tool_calls"][0]["call_id"]

    wrong = http.post(resume, json={"tool_responses": [{"call_id": "call_x", "tool_name": "t", "content": "1"}]})
    assert wrong.status_code == 400
    assert call_id in wrong.json()["detail"] and "call_x" in wrong.json()["detail"]

    twice = {"call_id": call_id, "tool_name": "get_boiling_point", "content": "1"}
    duplicated = http.post(resume, json={"tool_responses": [twice, twice]})
    assert duplicated.status_code == 400

    good = http.post(resume, json={"tool_responses": [twice], "stream": True})
    events = sse_events(good)
    assert events[0][1]["event"]["payload"]["step_type"] == "tool_execution"
    assert events[-1][1]["event"]["payload"]["event_type"] == "turn_complete"
    # Every event of the resumed stream comes after the pause event in the turn's log.
    assert all(event_id is not None and event_id > 0 for event_id, _ in events)

    again = http.post(resume, json={"tool_responses": [twice]})
    assert again.status_code == 409
    assert "completed, not awaiting input" in again.json()["detail"]


def test_max_infer_iters_counts_model_calls_across_resumes(http: httpx.Client, model: ScriptedModel) -> None:
    model.script(*[tool_call("get_boiling_point", {"liquid_name": str(i)}) for i in range(5)])
    turns = _turns(http, max_infer_iters=3)
    turn = final_turn(http.post(turns, json=_ask("loop")))
    resumes = 0
    while turn["status"] == "awaiting_input":
        call = turn["output_message"]["tool_calls"][0]
        answer = {"call_id": call["call_id"], "tool_name": call["tool_name"], "content": "again"}
        turn = final_turn(
            http.post(f"{turns}/{turn['turn_id']}/resume", json={"tool_responses": [answer], "stream": True})
        )
        resumes += 1

    assert resumes == 2
    assert len(model.requests) == 3
    assert [s["step_type"] for s in turn["steps"]].count("inference") == 3
    # The last model call's tool call is left unexecuted and the turn says so: end_of_turn.
    assert turn["status"] == "completed"
    assert turn["output_message"]["stop_reason"] == "end_of_turn"
    assert turn["output_message"]["tool_calls"][0]["arguments"] == {"liquid_name": "2"}


def test_retryable_provider_errors_are_retried_by_temporal(http: httpx.Client, model: ScriptedModel) -> None:
    model.script(failure(503), failure(429), text("third time lucky"))
    turns = _turns(http)

    turn = http.post(turns, json=_ask("hi", stream=False))

    assert turn.status_code == 200, turn.text
    assert turn.json()["output_message"]["content"] == "third time lucky "
    assert len(model.requests) == 3


def test_a_rejected_request_fails_the_turn_at_once_with_the_reason(http: httpx.Client, model: ScriptedModel) -> None:
    model.script(failure(401), text("never reached"))
    turns = _turns(http)

    streamed = http.post(turns, json=_ask("hi"))

    last = sse_events(streamed)[-1][1]
    assert set(last) == {"error"}
    assert "HTTP 401" in last["error"]["message"] and "scripted failure 401" in last["error"]["message"]
    assert len(model.requests) == 1
    # The session is free again, and the failed turn reads as failed.
    model.script(failure(400))
    not_streamed = http.post(turns, json=_ask("again", stream=False))
    assert not_streamed.status_code == 502
    assert not_streamed.headers["x-should-retry"] == "false"
    assert "HTTP 400" in not_streamed.json()["detail"]


def test_the_offline_model_calls_a_named_tool_and_reports_its_result(http: httpx.Client) -> None:
    turns = _turns(http, model="offline/echo")
    paused = final_turn(http.post(turns, json=_ask('call tool get_boiling_point {"liquid_name": "tea"}')))
    call = paused["output_message"]["tool_calls"][0]
    assert (call["tool_name"], call["arguments"]) == ("get_boiling_point", {"liquid_name": "tea"})

    answer = {"call_id": call["call_id"], "tool_name": call["tool_name"], "content": "99"}
    done = http.post(f"{turns}/{paused['turn_id']}/resume", json={"tool_responses": [answer]}).json()
    assert done["output_message"]["content"] == "Tool get_boiling_point returned: 99."

    echoed = http.post(turns, json=_ask("just words", stream=False)).json()
    assert echoed["output_message"]["content"] == "You said: just words"


def test_the_sdks_own_retry_of_a_create_without_a_key_answers_the_turn_it_repeats(
    http: httpx.Client, model: ScriptedModel
) -> None:
    """llama-stack-client retries a create it saw fail in transit (its API process died, a proxy's 5xx) with
    the same body, numbered by `x-stainless-retry-count` (set here by hand), and without an Idempotency-Key."""
    retry = {"x-stainless-retry-count": "1"}
    turns = _turns(http)
    model.script(text("once"), text("twice"), text("other"))
    first = http.post(turns, json=_ask("hello", stream=False), headers={"x-stainless-retry-count": "0"}).json()
    repeated = http.post(turns, json=_ask("hello", stream=False), headers=retry).json()
    assert repeated["turn_id"] == first["turn_id"] and repeated["output_message"]["content"] == "once "
    streamed = final_turn(http.post(turns, json=_ask("hello"), headers=retry))  # its events, from the start
    assert streamed["turn_id"] == first["turn_id"] and len(model.requests) == 1

    again = http.post(turns, json=_ask("hello", stream=False)).json()  # sent again on purpose: a new turn
    assert again["turn_id"] != first["turn_id"] and again["output_message"]["content"] == "twice "
    other = http.post(turns, json=_ask("something else", stream=False), headers=retry).json()
    assert other["turn_id"] not in (first["turn_id"], again["turn_id"])  # no earlier attempt of it
    assert other["output_message"]["content"] == "other " and len(model.requests) == 3
