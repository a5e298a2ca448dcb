"""Every turn option reaches the model as the provider expects: tool_choice, sampling, response
format, documents (inline and fetched from a URL)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import PlainTextResponse, Response

from tests.support.rest import create_agent, create_session, sse_events
from tests.support.scripted_model import ScriptedModel, ThreadedServer, text
from tests.support.stack import free_port


@pytest.fixture(scope="module")
def documents() -> Iterator[str]:
    app = FastAPI()

    @app.get("/notes.txt")
    def notes() -> PlainTextResponse:
        return PlainTextResponse("Polyjuice boils at -100 degrees.")

    @app.get("/image.png")
    def image() -> Response:
        return Response(b"\x89PNG", media_type="image/png")

    server = ThreadedServer(app, free_port()).start()
    yield server.allowed_url
    server.stop()


def _turn(http: httpx.Client, body: dict[str, object] | None = None, **config: object) -> httpx.Response:
    agent_id = create_agent(http, **config)
    turns = f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"
    return http.post(turns, json={"messages": [{"role": "user", "content": "hi"}], **(body or {})})


@pytest.mark.parametrize(
    ("choice", "sent"),
    [
        ("auto", "auto"),
        ("required", "required"),
        ("get_boiling_point", {"type": "function", "function": {"name": "get_boiling_point"}}),
    ],
)
def test_tool_choice_reaches_the_model(http: httpx.Client, model: ScriptedModel, choice: str, sent: object) -> None:
    model.script(text("fine"))
    _turn(http, tool_config={"tool_choice": choice}).raise_for_status()
    assert model.requests[0]["tool_choice"] == sent


def test_tool_choice_none_offers_no_tools_and_a_per_turn_config_wins(http: httpx.Client, model: ScriptedModel) -> None:
    model.script(text("no tools"))
    turn = _turn(http, tool_config={"tool_choice": "none"}).json()
    assert "tools" not in model.requests[0] and "tool_choice" not in model.requests[0]
    assert [s["step_type"] for s in turn["steps"]] == ["inference"]

    model.script(text("required now"))
    _turn(http, {"tool_config": {"tool_choice": "required"}}, tool_config={"tool_choice": "none"}).raise_for_status()
    assert model.requests[0]["tool_choice"] == "required"


def test_sampling_params_and_response_format_are_mapped(http: httpx.Client, model: ScriptedModel) -> None:
    model.script(text('{"answer": 42}'), text("greedy"))
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    sampling = {"strategy": {"type": "top_p", "temperature": 0.7, "top_p": 0.9}, "max_tokens": 50, "stop": ["END"]}
    _turn(
        http, sampling_params=sampling, response_format={"type": "json_schema", "json_schema": schema}
    ).raise_for_status()
    sent = model.requests[0]
    assert (sent["temperature"], sent["top_p"], sent["max_tokens"], sent["stop"]) == (0.7, 0.9, 50, ["END"])
    assert sent["response_format"] == {"type": "json_schema", "json_schema": {"name": "response", "schema": schema}}

    _turn(http, sampling_params={"strategy": {"type": "greedy"}}).raise_for_status()
    greedy = model.requests[1]
    assert greedy["temperature"] == 0.0 and "max_tokens" not in greedy and "response_format" not in greedy


def test_documents_inline_and_by_url_join_the_last_message(
    http: httpx.Client, model: ScriptedModel, documents: str
) -> None:
    model.script(text("read them"))
    docs = [
        {"content": "Inline note.", "mime_type": "text/plain"},
        {"content": {"type": "url", "uri": f"{documents}/notes.txt"}, "mime_type": "text/plain"},
    ]
    turn = _turn(http, {"documents": docs}).json()

    sent = model.requests[0]["messages"][-1]["content"]
    assert sent == "hi\nInline note.\nPolyjuice boils at -100 degrees."
    assert turn["input_messages"][0]["content"] == sent


def test_an_unusable_document_fails_the_turn_with_the_reason(
    http: httpx.Client, model: ScriptedModel, documents: str
) -> None:
    missing = [{"content": {"uri": f"{documents}/missing.txt"}, "mime_type": "text/plain"}]
    events = sse_events(_turn(http, {"documents": missing, "stream": True}))
    assert events[-1][1]["error"]["message"] == f"Document {documents}/missing.txt could not be used: HTTP 404"

    binary = [{"content": {"uri": f"{documents}/image.png"}, "mime_type": "text/plain"}]
    failed = _turn(http, {"documents": binary})
    assert failed.status_code == 502 and "it is image/png, not text/*" in failed.json()["detail"]

    refused = _turn(http, {"documents": [{"content": "x", "mime_type": "application/pdf"}]})
    assert refused.status_code == 400 and "only text/*" in refused.json()["detail"]
    assert model.requests == []
