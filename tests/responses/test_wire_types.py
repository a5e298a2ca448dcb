"""What the Responses and Conversations routes put on the wire, validated strictly against the `openai` SDK's
types (tests/support/sdk_types.py) over real HTTP from the real stack: every response object and every streamed
event of a plain, streamed, function-call, MCP-approval, file_search and background response, their retrievals,
input items and lists, and conversations with their items. A missing required field or a wrong type fails, and
a field the types do not declare must be one of our documented extensions (docs/api-dialects.md).

Beyond the SDK's types, the OpenAI API's own schema (and the generated clients built from it) asks more than the
SDK's lenient models do: sampling parameters as numbers, an echoed function tool's `strict`, a list page's
`first_id` / `last_id` as strings. Those are checked here too."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from openai.types.conversations import Conversation, ConversationDeletedResource, ConversationItem, ConversationItemList
from openai.types.responses import ResponseItemList

from configuration.settings import OFFLINE_MODEL_ID
from tests.support.knowledge_files import wait_for_file
from tests.support.processes import EVENT_SECONDS, wait_until
from tests.support.scripted_model import ScriptedModel, ThreadedServer, text, tool_call
from tests.support.sdk_types import check_against, check_response, check_stream_event
from tests.support.stack import SCRIPTED_MODEL, Stack

# Fields we send that the SDK's types do not declare; each must be one we document. `store`: whether the response
# is kept (the OpenAI API answers it too; the SDK's `Response` lacks it). `response_id`: on the output-item and
# content-part events, the response they belong to (as llama-stack's Responses events carry it).
# `presence_penalty` / `frequency_penalty`: sampling parameters the OpenAI schema's response has and the SDK's lacks.
RESPONSE_EXTENSIONS = {"store", "presence_penalty", "frequency_penalty"}
EVENT_EXTENSIONS = {"response_id"} | {f"response.{field}" for field in RESPONSE_EXTENSIONS}

WEATHER: dict[str, Any] = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


@pytest.fixture
def api(stack: Stack) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"{stack.base_url}/v1", timeout=60) as made:
        yield made


def created(api: httpx.Client, model: ScriptedModel, **body: Any) -> dict[str, Any]:
    model.script(text("Hello from the model"))
    answer = api.post("/responses", json={"model": SCRIPTED_MODEL, "input": "Say hello", **body})
    assert answer.status_code == 200, answer.text
    shown: dict[str, Any] = answer.json()
    assert shown["status"] == "completed", shown
    return shown


def streamed(api: httpx.Client, model: ScriptedModel, **body: Any) -> list[dict[str, Any]]:
    """The `data` of every server-sent event of a streamed create, as a client reads them off the wire."""
    model.script(text("one two three"))
    events = []
    with api.stream(
        "POST", "/responses", json={"model": SCRIPTED_MODEL, "input": "count", "stream": True, **body}
    ) as answer:
        assert answer.status_code == 200
        for line in answer.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line.removeprefix("data: ")))
    assert events and events[-1]["type"] == "response.completed", events
    return events


def test_a_plain_response_its_retrieval_and_every_streamed_event_are_what_the_sdk_types_say(
    api: httpx.Client, model: ScriptedModel
) -> None:
    response = created(api, model, instructions="Be brief.", metadata={"k": "v"}, tools=[WEATHER])
    check_response(response).assert_conforms(RESPONSE_EXTENSIONS)
    check_response(response, beta=True).assert_conforms(RESPONSE_EXTENSIONS)
    check_response(api.get(f"/responses/{response['id']}").json()).assert_conforms(RESPONSE_EXTENSIONS)

    events = streamed(api, model, tools=[WEATHER])
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    for event in events:
        check_stream_event(event).assert_conforms(EVENT_EXTENSIONS)


def test_the_checks_fail_on_what_a_strict_client_rejects(api: httpx.Client, model: ScriptedModel) -> None:
    """The checks themselves can fail: a real response with one required field taken away, another of the wrong
    type, and a field of no type."""
    response = created(api, model)
    broken = {key: value for key, value in response.items() if key != "tool_choice"} | {"parallel_tool_calls": "yes"}
    assert set(check_response(broken).errors) == {
        "tool_choice: Field required",
        "parallel_tool_calls: Input should be a valid boolean (got 'yes')",
    }
    extended = copy.deepcopy(response) | {"made_up": 1}
    extended["output"][0]["content"][0]["made_up"] = 2
    checked = check_response(extended)
    assert checked.errors == () and checked.unknown_outside(RESPONSE_EXTENSIONS) == [
        "made_up",
        "output[0].content[0].made_up",
    ]
    allowed = [*RESPONSE_EXTENSIONS, "made_up", "output[].content[].other"]
    assert checked.unknown_outside(allowed) == ["output[0].content[0].made_up"]
    assert check_stream_event({"type": "response.made_up", "sequence_number": 0}).errors == (
        "(the object): no type of this union is 'response.made_up'",
    )


def test_the_sampling_parameters_are_the_numbers_used(api: httpx.Client, model: ScriptedModel) -> None:
    response = created(api, model)
    sampling = {name: response.get(name) for name in ("temperature", "top_p", "presence_penalty", "frequency_penalty")}
    assert all(isinstance(value, int | float) for value in sampling.values()), sampling


def test_an_echoed_function_tool_carries_strict(api: httpx.Client, model: ScriptedModel) -> None:
    [tool] = created(api, model, tools=[WEATHER])["tools"]
    assert "strict" in tool, tool


def test_an_empty_list_page_has_string_first_and_last_ids(api: httpx.Client) -> None:
    conversation = api.post("/conversations", json={}).json()
    page = api.get(f"/conversations/{conversation['id']}/items").json()
    assert page["data"] == []
    check_against(ConversationItemList, page).assert_conforms()
    store = api.post("/vector_stores", json={"name": "empty"}).json()
    files = api.get(f"/vector_stores/{store['id']}/files").json()
    assert files["data"] == [] and isinstance(files["first_id"], str) and isinstance(files["last_id"], str), files


def checked_stream(api: httpx.Client, body: dict[str, Any]) -> list[dict[str, Any]]:
    """A streamed create (or a replay, with `body` None) whose every event conforms; its events."""
    events = []
    with api.stream("POST", "/responses", json={"model": SCRIPTED_MODEL, "stream": True, **body}) as answer:
        assert answer.status_code == 200, answer.read()
        for line in answer.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line.removeprefix("data: ")))
    for event in events:
        check_stream_event(event).assert_conforms(EVENT_EXTENSIONS)
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    return events


def conforms(response: dict[str, Any]) -> dict[str, Any]:
    """The response conforms as `Response` and as `BetaResponse`; the response."""
    check_response(response).assert_conforms(RESPONSE_EXTENSIONS)
    check_response(response, beta=True).assert_conforms(RESPONSE_EXTENSIONS)
    return response


def test_a_function_call_its_continuation_and_their_reads_are_what_the_sdk_types_say(
    api: httpx.Client, model: ScriptedModel
) -> None:
    model.script(tool_call("get_weather", {"city": "Oslo"}))
    paused = checked_stream(api, {"input": "Oslo?", "tools": [WEATHER]})[-1]["response"]
    [call] = [item for item in paused["output"] if item["type"] == "function_call"]
    model.script(text("Cold in Oslo."))
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": "-5 C"}
    done = checked_stream(api, {"previous_response_id": paused["id"], "input": [output], "tools": [WEATHER]})
    assert done[-1]["type"] == "response.completed"
    for response_id in (paused["id"], done[-1]["response"]["id"]):
        conforms(api.get(f"/responses/{response_id}").json())
        page = api.get(f"/responses/{response_id}/input_items").json()
        check_against(ResponseItemList, page).assert_conforms()
    listed = api.get("/responses", params={"limit": 5}).json()
    assert listed["data"]
    for response in listed["data"]:
        conforms(response)


def test_an_mcp_approval_and_its_answer_are_what_the_sdk_types_say(
    api: httpx.Client, model: ScriptedModel, mcp: ThreadedServer
) -> None:
    tool = {
        "type": "mcp",
        "server_label": "calc",
        "server_url": f"{mcp.allowed_url}/mcp",
        "allowed_tools": ["add_numbers"],
        "require_approval": "always",
    }
    model.script(tool_call("add_numbers", {"a": 4, "b": 5}), text("9"))
    asked = checked_stream(api, {"input": "add 4 and 5", "tools": [tool]})[-1]["response"]
    [request] = [item for item in asked["output"] if item["type"] == "mcp_approval_request"]
    decision = {"type": "mcp_approval_response", "approval_request_id": request["id"], "approve": True}
    answered = checked_stream(api, {"previous_response_id": asked["id"], "input": [decision], "tools": [tool]})
    assert [item["type"] for item in answered[-1]["response"]["output"]] == ["mcp_call", "message"]
    conforms(api.get(f"/responses/{answered[-1]['response']['id']}").json())


def test_a_file_search_is_what_the_sdk_types_say(api: httpx.Client, stack: Stack) -> None:
    oai = openai.OpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0)
    handbook = oai.files.create(file=("handbook.txt", b"Lifeboat drills happen every Tuesday."), purpose="assistants")
    store = oai.vector_stores.create(name="ship", file_ids=[handbook.id])
    assert wait_for_file(oai, store.id, handbook.id).status == "completed"
    tool = {"type": "file_search", "vector_store_ids": [store.id]}
    body = {
        "model": OFFLINE_MODEL_ID,
        "input": "Look up lifeboat drills in the documents.",
        "tools": [tool],
        "include": ["file_search_call.results"],
    }
    events = checked_stream(api, body)
    assert "response.file_search_call.completed" in [event["type"] for event in events]
    plain = api.post("/responses", json=body).json()
    assert plain["output"][0]["type"] == "file_search_call"
    conforms(plain)
    oai.vector_stores.delete(store.id)


def test_a_background_response_its_replayed_stream_and_a_cancel_are_what_the_sdk_types_say(
    api: httpx.Client, model: ScriptedModel
) -> None:
    model.script(text("later"))
    queued = conforms(api.post("/responses", json={"model": SCRIPTED_MODEL, "input": "x", "background": True}).json())
    finished = wait_until(
        lambda: (shown := api.get(f"/responses/{queued['id']}").json())["status"] == "completed" and shown,
        "the background response completes",
        EVENT_SECONDS,
    )
    conforms(finished)
    with api.stream("GET", f"/responses/{queued['id']}", params={"stream": "true"}) as replay:
        replayed = [json.loads(line[6:]) for line in replay.iter_lines() if line.startswith("data: ")]
    assert replayed[-1]["type"] == "response.completed"
    for event in replayed:
        check_stream_event(event).assert_conforms(EVENT_EXTENSIONS)
    model.script(text("slow", delay_seconds=30))
    running = api.post("/responses", json={"model": SCRIPTED_MODEL, "input": "y", "background": True}).json()
    conforms(api.post(f"/responses/{running['id']}/cancel").json())


def test_conversations_their_items_and_lists_are_what_the_sdk_types_say(
    api: httpx.Client, model: ScriptedModel
) -> None:
    message = {"type": "message", "role": "user", "content": "Remember: blue."}
    conversation = api.post("/conversations", json={"items": [message], "metadata": {"k": "v"}}).json()
    check_against(Conversation, conversation).assert_conforms()
    model.script(text("Noted."))
    answered = api.post(
        "/responses", json={"model": SCRIPTED_MODEL, "input": "ok?", "conversation": conversation["id"]}
    ).json()
    conforms(answered)
    added = api.post(f"/conversations/{conversation['id']}/items", json={"items": [message]}).json()
    check_against(ConversationItemList, added).assert_conforms()
    page = api.get(f"/conversations/{conversation['id']}/items").json()
    check_against(ConversationItemList, page).assert_conforms()
    assert len(page["data"]) == 4, page
    one = api.get(f"/conversations/{conversation['id']}/items/{page['data'][0]['id']}").json()
    check_against(ConversationItem, one).assert_conforms()
    updated = api.post(f"/conversations/{conversation['id']}", json={"metadata": {"k": "w"}}).json()
    check_against(Conversation, updated).assert_conforms()
    check_against(Conversation, api.get(f"/conversations/{conversation['id']}").json()).assert_conforms()
    after_delete = api.delete(f"/conversations/{conversation['id']}/items/{page['data'][0]['id']}").json()
    check_against(Conversation, after_delete).assert_conforms()
    deleted = api.delete(f"/conversations/{conversation['id']}").json()
    check_against(ConversationDeletedResource, deleted).assert_conforms()
