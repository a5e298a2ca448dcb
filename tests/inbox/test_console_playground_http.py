"""The playground's endpoint over plain HTTP: on a server without keys it streams the Responses API's own events
as they come (the console's CSRF token is all it needs); a signed-out visitor of a keyed server is refused, and
so is a turn that is not one the playground makes."""

from __future__ import annotations

import json

import httpx

from tests.inbox.waiting import Tenant
from tests.support.scripted_model import ScriptedModel, text
from tests.support.stack import SCRIPTED_MODEL

ENDPOINT = "/console/playground/responses"


def _events(body: str) -> list[dict]:
    return [json.loads(line.removeprefix("data: ")) for line in body.splitlines() if line.startswith("data: ")]


def test_without_keys_a_turn_streams_the_responses_events_and_continues_by_previous_response_id(
    http: httpx.Client, model: ScriptedModel
) -> None:
    page = http.get("/console/playground")
    assert page.status_code == 200 and f'<option value="{SCRIPTED_MODEL}">' in page.text
    token = http.cookies["da_console_csrf"]
    model.script(text("one two three"), text("four"))
    with http.stream(
        "POST", ENDPOINT, json={"model": SCRIPTED_MODEL, "input": "count"}, headers={"x-csrf-token": token}
    ) as streamed:
        assert streamed.status_code == 200 and streamed.headers["content-type"].startswith("text/event-stream")
        assert "script-src 'self'" in streamed.headers["content-security-policy"]
        events = _events(streamed.read().decode())
    types = [event["type"] for event in events]
    assert types[0] == "response.created" and types[-1] == "response.completed"
    assert "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta").strip() == "one two three"
    first = events[-1]["response"]["id"]

    again = http.post(
        ENDPOINT,
        json={"model": SCRIPTED_MODEL, "input": "more", "previous_response_id": first},
        headers={"x-csrf-token": token},
    )
    assert _events(again.text)[-1]["response"]["previous_response_id"] == first
    assert "one two three" in str(model.requests[-1]["messages"])


def test_a_signed_out_visitor_or_a_turn_the_playground_does_not_make_is_refused(
    tenants: tuple[Tenant, Tenant], http: httpx.Client, model: ScriptedModel
) -> None:
    with httpx.Client(base_url=str(tenants[0].http.base_url)) as anonymous:
        anonymous.cookies.set("da_console_csrf", "t", path="/console")
        refused = anonymous.post(ENDPOINT, json={"model": SCRIPTED_MODEL, "input": "hi"}, headers={"x-csrf-token": "t"})
        assert refused.status_code == 401 and "Sign in" in refused.json()["detail"]

    http.get("/console/playground")
    token = {"x-csrf-token": http.cookies["da_console_csrf"]}
    both = http.post(
        ENDPOINT,
        json={"model": SCRIPTED_MODEL, "input": "x", "tool_outputs": [{"call_id": "c", "output": "o"}]},
        headers=token,
    )
    assert both.status_code == 400 and "not both" in both.json()["detail"]
    unanswered = http.post(
        ENDPOINT, json={"model": SCRIPTED_MODEL, "tool_outputs": [{"call_id": "c", "output": "o"}]}, headers=token
    )
    assert unanswered.status_code == 400 and "previous_response_id" in unanswered.json()["detail"]
    unknown_model = http.post(ENDPOINT, json={"model": "no-such-model", "input": "x"}, headers=token)
    assert unknown_model.status_code == 400 and "no-such-model" in unknown_model.text  # the Responses API's refusal
    assert model.requests == []
