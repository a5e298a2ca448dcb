"""The Responses request and its context, without a server: parsing (spec §2), the §6.1 checks on prior
items + new input, and the neutral messages a turn is started with."""

from __future__ import annotations

from typing import Any

import pytest

from api.openai.errors import OpenAIError, envelope
from api.openai.responses.context import (
    check_tool_outputs,
    fit_context,
    parse_items,
    resolve_references,
    split_input,
    to_messages,
)
from api.openai.responses.request import parse_create
from domain.content import CompletionMessage, ToolResponseMessage, UserMessage
from domain.turn_settings import SystemMessage


def refusal(body: Any) -> dict[str, Any]:
    with pytest.raises(OpenAIError) as raised:
        parse_create(body)
    assert raised.value.status_code == 400
    return raised.value.detail  # type: ignore[return-value]


def test_the_forms_clients_send_are_accepted() -> None:
    assert parse_create({"model": "m", "input": "hi"}).items()[0].text() == "hi"
    agents = parse_create(
        {
            "model": "m",
            "include": [],
            "input": [
                {"role": "user", "content": "What is the weather?"},  # no `type`: openai-agents
                {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "w", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
                {"id": "msg_9"},  # an item_reference without its type
            ],
            "prompt": None,  # a parameter this server does not implement, sent as null: asks for nothing
        }
    )
    assert [item.type for item in agents.items()] == [
        "message",
        "function_call",
        "function_call_output",
        "item_reference",
    ]
    conversation = parse_create({"model": "m", "input": "x", "conversation": {"id": "conv_" + "a" * 48}})
    assert conversation.conversation_id == "conv_" + "a" * 48
    mcp = parse_create(
        {
            "model": "m",
            "input": "x",
            "tools": [
                {
                    "type": "mcp",
                    "server_label": "s",
                    "server_url": "http://h/mcp",
                    "headers": {"X-Key": "secret"},
                    "require_approval": {"never": {"tool_names": ["a"]}},
                }
            ],
        }
    )
    assert "secret" not in str(mcp.echo_tools()) and "secret" not in repr(mcp)


@pytest.mark.parametrize(
    ("body", "param", "says"),
    [
        ({"input": "x"}, "model", "Missing required parameter: 'model'"),
        ({"model": "m", "input": [{"type": "nope"}]}, "input", "input items are one of"),
        (
            {"model": "m", "input": "x", "tools": [{"type": "image_generation"}]},
            "tools",
            "'image_generation' is not supported",
        ),
        ({"model": "m", "input": "x", "include": ["bogus"]}, "include", "unknown include"),
        ({"model": "m", "input": "x", "metadata": {str(i): "v" for i in range(17)}}, "metadata", "at most 16"),
        ({"model": "m", "input": "x", "conversation": "conv_1"}, "conversation", "not a conversation id"),
        ({"model": "m", "input": "x", "temperature": 3}, "temperature", "less than or equal to 2"),
        ({"model": "m", "input": "x", "background": True, "store": False}, "background", "requires 'store'"),
        (
            {"model": "m", "input": "x", "previous_response_id": "resp_1", "conversation": "conv_" + "a" * 48},
            "conversation",
            "Mutually exclusive",
        ),
        ({"model": "m", "input": [{"type": "function_call_output", "output": "o"}]}, "input", "call_id"),
    ],
)
def test_bad_requests_name_the_field(body: dict[str, Any], param: str, says: str) -> None:
    detail = refusal(body)
    assert detail["param"] == param and says in detail["message"], detail


def items(*raw: dict[str, Any]) -> list[Any]:
    return parse_items(list(raw))


CALL = {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": '{"city": "Paris"}'}
OUTPUT = {"type": "function_call_output", "call_id": "c1", "output": "sunny"}
USER = {"role": "user", "content": "Weather in Paris?"}


def test_outputs_must_answer_calls_in_context_exactly_once() -> None:
    check_tool_outputs(items(USER, CALL), items(OUTPUT))
    check_tool_outputs([], items(USER, CALL, OUTPUT, {"role": "user", "content": "thanks"}))
    cases: list[tuple[tuple[dict[str, Any], ...], tuple[dict[str, Any], ...], str]] = [
        ((USER,), (OUTPUT,), "No tool call found for function call output with call_id c1"),
        ((USER, CALL), (USER,), "No tool output found for function call c1."),
        ((USER, CALL), (OUTPUT, OUTPUT), "Duplicate function call output"),
        ((), ({"type": "mcp_approval_response", "approval_request_id": "mcpr_x", "approve": True},), "mcpr_x"),
    ]
    for prior, new, says in cases:
        with pytest.raises(OpenAIError) as raised:
            check_tool_outputs(items(*prior), items(*new))
        assert says in raised.value.detail["message"] and raised.value.detail["param"] == "input"  # type: ignore[index]


def test_item_references_resolve_from_the_context() -> None:
    prior = items({"type": "message", "id": "msg_1", "role": "assistant", "content": "Earlier"})
    resolved = resolve_references(items({"type": "item_reference", "id": "msg_1"}), prior)
    assert resolved[0].text() == "Earlier"
    with pytest.raises(OpenAIError):
        resolve_references(items({"id": "msg_404"}), prior)


def test_items_become_the_messages_a_model_reads() -> None:
    messages = to_messages(
        items(
            {"role": "developer", "content": "Be brief."},
            USER,
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Let me look."}]},
            CALL,
            {"type": "reasoning", "id": "rs_1", "summary": []},
            OUTPUT,
            {"type": "mcp_list_tools", "server_label": "s", "tools": []},
            {"type": "mcp_call", "id": "mcp_1", "server_label": "s", "name": "add", "arguments": "{}", "output": "3"},
            {"role": "user", "content": "And tomorrow?"},
        )
    )
    assert [type(message) for message in messages] == [
        SystemMessage,
        UserMessage,
        CompletionMessage,
        ToolResponseMessage,
        CompletionMessage,
        ToolResponseMessage,
        UserMessage,
    ]
    assistant = messages[2]
    assert isinstance(assistant, CompletionMessage)
    assert assistant.content == "Let me look." and assistant.tool_calls[0].arguments == {"city": "Paris"}
    split = split_input(messages)
    assert split.input == messages[-1:] and split.context == messages[:-1]
    replayed = split_input(to_messages(items(USER, CALL, OUTPUT)))
    assert replayed.input == [] and [type(m) for m in replayed.context] == [
        UserMessage,
        CompletionMessage,
        ToolResponseMessage,
    ]


def test_truncation_auto_drops_the_oldest_and_disabled_refuses() -> None:
    context = to_messages(items(*[{"role": "user", "content": "x" * 100}] * 10, CALL, OUTPUT))
    kept = fit_context(context, 600, "auto")
    assert 0 < len(kept) < len(context) and kept[-1] == context[-1]
    with pytest.raises(OpenAIError) as raised:
        fit_context(context, 600, "disabled")
    assert raised.value.detail["code"] == "context_length_exceeded"  # type: ignore[index]
    orphaned = fit_context(to_messages(items(USER, CALL, OUTPUT, USER)), 150, "auto")
    assert not isinstance(orphaned[0], ToolResponseMessage)


def test_other_error_bodies_get_the_openai_envelope() -> None:
    assert envelope(401, {"detail": "send a key"}) == {
        "error": {"message": "send a key", "type": "authentication_error", "param": None, "code": "invalid_api_key"}
    }
    validation = envelope(400, {"detail": "Invalid request: x", "errors": [{"loc": ["query", "limit"], "type": "x"}]})
    assert validation["error"]["param"] == "limit"
    assert envelope(429, {"detail": "slow down"})["error"]["code"] == "rate_limit_exceeded"
    assert envelope(503, None)["error"]["type"] == "server_error"


@pytest.mark.parametrize(
    ("key", "value", "code"),
    [
        ("extra_body_key", 1, "unknown_parameter"),  # what the SDK's extra_body merges into the body
        ("temperture", 0.5, "unknown_parameter"),
        ("prompt", {"id": "pmpt_x"}, "unsupported_parameter"),
        ("prompt_cache_retention", "24h", "unsupported_parameter"),
        ("top_logprobs", 2, "unsupported_parameter"),
    ],
)
def test_a_parameter_the_server_does_not_know_or_implement_is_refused_by_name(key: str, value: Any, code: str) -> None:
    detail = refusal({"model": "m", "input": "x", key: value})
    assert (detail["param"], detail["code"]) == (key, code) and f"'{key}'" in detail["message"], detail
