"""Over real HTTP with the unmodified `openai` SDK: every create and update body of the Responses and
Conversations routes refuses a top-level parameter it does not know by name (the SDK's `extra_body` merges its
keys into the body), `prompt` is refused naming it rather than ignored, and the `?beta=true` the SDK's
`client.beta.responses` adds is accepted."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import openai
import pytest
from openai import OpenAI

from tests.support.scripted_model import ScriptedModel, text
from tests.support.stack import SCRIPTED_MODEL, Stack


@pytest.fixture
def client(stack: Stack) -> Iterator[OpenAI]:
    with OpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0, timeout=60) as made:
        yield made


def refused(call: Callable[[], Any]) -> dict[str, Any]:
    with pytest.raises(openai.BadRequestError) as raised:
        call()
    body: dict[str, Any] = raised.value.body  # type: ignore[assignment]
    return body


def test_every_create_and_update_body_refuses_an_unknown_parameter_by_name(client: OpenAI) -> None:
    conversation = client.conversations.create()
    extra: Any = {"colour": "blue"}
    calls: list[Callable[[], Any]] = [
        lambda: client.responses.create(model=SCRIPTED_MODEL, input="hi", extra_body=extra),
        lambda: client.beta.responses.create(model=SCRIPTED_MODEL, input="hi", extra_body=extra),
        lambda: client.responses.compact(model=SCRIPTED_MODEL, input="hi", extra_body=extra),
        lambda: client.conversations.create(extra_body=extra),
        lambda: client.conversations.update(conversation.id, metadata={"k": "v"}, extra_body=extra),
        lambda: client.conversations.items.create(
            conversation.id, items=[{"type": "message", "role": "user", "content": "hi"}], extra_body=extra
        ),
    ]
    for call in calls:
        body = refused(call)
        assert body["code"] == "unknown_parameter" and body["param"] == "colour", body
        assert "'colour'" in body["message"], body
    assert client.conversations.items.list(conversation.id).data == []  # nothing was added meanwhile


def test_prompt_is_refused_naming_it_and_a_null_one_asks_for_nothing(client: OpenAI, model: ScriptedModel) -> None:
    body = refused(
        lambda: client.responses.create(model=SCRIPTED_MODEL, input="hi", prompt={"id": "pmpt_x", "version": "2"})
    )
    assert (body["param"], body["code"]) == ("prompt", "unsupported_parameter"), body
    assert "prompt" in body["message"]
    model.script(text("fine"))
    answered = client.responses.create(model=SCRIPTED_MODEL, input="hi", extra_body={"prompt": None})
    assert answered.output_text.strip() == "fine"


def test_the_beta_responses_client_works_over_http(client: OpenAI, model: ScriptedModel) -> None:
    """`client.beta.responses` sends `?beta=true` on every route it calls."""
    model.script(text("beta hello"))
    created = client.beta.responses.create(model=SCRIPTED_MODEL, input="hi")
    assert created.status == "completed"
    assert client.beta.responses.retrieve(created.id).id == created.id
    items = client.beta.responses.input_items.list(created.id)
    assert [item.type for item in items.data] == ["message"]
    model.script(text("again"))
    streamed = client.beta.responses.create(model=SCRIPTED_MODEL, input="hi", stream=True)
    assert [event.type for event in streamed][-1] == "response.completed"
    client.beta.responses.delete(created.id)
    with pytest.raises(openai.NotFoundError):
        client.beta.responses.retrieve(created.id)
