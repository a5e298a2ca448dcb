"""The Conversations API (OpenAI dialect) driven by the unmodified openai SDK and openai-agents' session memory,
over real HTTP against the real store: shapes, ordering and pages, errors in OpenAI's envelope, and tenancy."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import openai
import pytest
from agents.memory import OpenAIConversationsSession
from sqlalchemy import func, select

from api.app import create_app
from api.services import Services
from store.responses.conversations import Item
from store.responses.tables import ConversationItemRow
from tests.support.scripted_model import ThreadedServer
from tests.support.stack import Stack, free_port

CONVERSATION_ID = re.compile(r"^conv_[0-9a-f]{48}$")
MESSAGE_ID = re.compile(r"^msg_[0-9a-f]{48}$")

CONVERSATION_ROUTES = {
    ("post", "/v1/conversations"),
    ("get", "/v1/conversations/{conversation_id}"),
    ("post", "/v1/conversations/{conversation_id}"),
    ("delete", "/v1/conversations/{conversation_id}"),
    ("post", "/v1/conversations/{conversation_id}/items"),
    ("get", "/v1/conversations/{conversation_id}/items"),
    ("get", "/v1/conversations/{conversation_id}/items/{item_id}"),
    ("delete", "/v1/conversations/{conversation_id}/items/{item_id}"),
}
"""Walked by the tenancy test here (tests/security/test_tenancy.py counts them as walked)."""

HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {
        "type": "function_call",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": '{"city": "Paris"}',
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
    {
        "type": "message",
        "id": "msg_given",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "It is sunny.", "annotations": [], "logprobs": []}],
    },
    {
        "type": "mcp_call",
        "id": "mcp_1",
        "server_label": "deepwiki",
        "name": "ask",
        "arguments": "{}",
        "output": "42",
        "error": None,
    },
]


def _client(url: str, key: str = "unused") -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0, timeout=30)


@pytest.fixture
async def client(stack: Stack) -> AsyncIterator[openai.AsyncOpenAI]:
    async with _client(stack.base_url) as made:
        yield made


@pytest.fixture
async def raw(stack: Stack) -> AsyncIterator[httpx.AsyncClient]:
    """Plain HTTP, for what the SDK cannot send."""
    async with httpx.AsyncClient(base_url=stack.base_url, timeout=30) as made:
        yield made


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


async def test_a_conversation_is_created_read_updated_and_deleted(client: openai.AsyncOpenAI) -> None:
    created = await client.conversations.create(items=HISTORY, metadata={"name": "s1", "topic": "weather"})

    assert CONVERSATION_ID.match(created.id)
    assert created.object == "conversation"
    assert created.metadata == {"name": "s1", "topic": "weather"}
    assert (await client.conversations.retrieve(created.id)).model_dump() == created.model_dump()

    updated = await client.conversations.update(created.id, metadata={"name": "s2"})
    assert updated.metadata == {"name": "s2"}  # replaced as a whole
    assert updated.created_at == created.created_at
    assert (await client.conversations.retrieve(created.id)).metadata == {"name": "s2"}

    deleted = await client.conversations.delete(created.id)
    assert (deleted.id, deleted.object, deleted.deleted) == (created.id, "conversation.deleted", True)
    with pytest.raises(openai.NotFoundError) as missing:
        await client.conversations.retrieve(created.id)
    assert missing.value.body == {
        "message": f"Conversation with id '{created.id}' not found.",
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }


async def test_empty_conversations_are_made_from_an_empty_body_or_no_items(
    client: openai.AsyncOpenAI, raw: httpx.AsyncClient
) -> None:
    made = [
        await client.conversations.create(),  # the raw SDK's {}
        await client.conversations.create(items=[]),  # openai-agents' {"items": []}
        await client.conversations.create(metadata=None),
    ]
    bare = await raw.post("/v1/conversations")  # no body at all
    assert bare.status_code == 200, bare.text

    for conversation in [*made, openai.types.conversations.Conversation(**bare.json())]:
        assert conversation.metadata == {}
        page = await client.conversations.items.list(conversation.id)
        assert (page.data, page.has_more, page.first_id, page.last_id) == ([], False, "", "")


async def test_items_are_stored_with_ids_status_and_content_parts(client: openai.AsyncOpenAI) -> None:
    conversation = await client.conversations.create(items=HISTORY)

    items = [
        item.model_dump(exclude_unset=True)
        for item in (await client.conversations.items.list(conversation.id, order="asc")).data
    ]

    user, call, output, answer, mcp = items
    assert MESSAGE_ID.match(user["id"])
    assert user == {
        "id": user["id"],
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "What is the weather in Paris?"}],
        "status": "completed",
    }
    assert call == {**HISTORY[1], "id": call["id"], "status": "completed"}
    assert re.match(r"^fc_[0-9a-f]{48}$", call["id"])
    assert output == {**HISTORY[2], "id": output["id"], "status": "completed"}
    assert answer == HISTORY[3]  # given with its id and status: kept as it came
    assert mcp == {**HISTORY[4], "status": "completed"}

    for item in items:
        retrieved = await client.conversations.items.retrieve(item["id"], conversation_id=conversation.id)
        assert retrieved.model_dump(exclude_unset=True) == item


async def test_items_added_later_follow_and_are_answered_as_stored(client: openai.AsyncOpenAI) -> None:
    conversation = await client.conversations.create(items=[_message("first")])

    added = await client.conversations.items.create(
        conversation.id, items=[_message("second"), {"role": "assistant", "content": "third"}]
    )

    assert [item.content[0].text for item in added.data] == ["second", "third"]
    assert added.data[1].content[0].model_dump(exclude_unset=True) == {
        "type": "output_text",
        "text": "third",
        "annotations": [],
    }
    assert (added.first_id, added.last_id, added.has_more) == (added.data[0].id, added.data[1].id, False)
    newest_first = await client.conversations.items.list(conversation.id)  # desc by default
    assert [item.content[0].text for item in newest_first.data] == ["third", "second", "first"]


async def test_items_page_in_both_orders_with_the_sdks_auto_pagination(client: openai.AsyncOpenAI) -> None:
    conversation = await client.conversations.create(items=[_message(f"m{i}") for i in range(20)])
    await client.conversations.items.create(conversation.id, items=[_message(f"m{i}") for i in range(20, 40)])
    await client.conversations.items.create(conversation.id, items=[_message(f"m{i}") for i in range(40, 45)])
    expected = [f"m{i}" for i in range(45)]

    first = await client.conversations.items.list(conversation.id)
    assert len(first.data) == 20 and first.has_more  # limit 20 by default, newest first
    assert [item.content[0].text for item in first.data] == expected[::-1][:20]
    assert (first.first_id, first.last_id) == (first.data[0].id, first.data[-1].id)

    ascending = [item async for item in client.conversations.items.list(conversation.id, order="asc", limit=7)]
    assert [item.content[0].text for item in ascending] == expected
    descending = [item async for item in client.conversations.items.list(conversation.id, order="desc", limit=100)]
    assert [item.content[0].text for item in descending] == expected[::-1]

    middle = await client.conversations.items.list(conversation.id, order="asc", after=ascending[9].id, limit=3)
    assert [item.content[0].text for item in middle.data] == ["m10", "m11", "m12"] and middle.has_more
    last = await client.conversations.items.list(conversation.id, order="asc", after=ascending[41].id, limit=3)
    assert [item.content[0].text for item in last.data] == ["m42", "m43", "m44"] and not last.has_more


async def test_deleting_an_item_answers_the_conversation(client: openai.AsyncOpenAI) -> None:
    conversation = await client.conversations.create(items=[_message("keep"), _message("drop")], metadata={"a": "b"})
    keep, drop = (await client.conversations.items.list(conversation.id, order="asc")).data

    after = await client.conversations.items.delete(drop.id, conversation_id=conversation.id)

    assert after.model_dump() == conversation.model_dump()
    assert [item.id for item in (await client.conversations.items.list(conversation.id)).data] == [keep.id]
    with pytest.raises(openai.NotFoundError, match=f"Item with id '{drop.id}' not found"):
        await client.conversations.items.retrieve(drop.id, conversation_id=conversation.id)
    with pytest.raises(openai.NotFoundError, match=f"Item with id '{drop.id}' not found"):
        await client.conversations.items.delete(drop.id, conversation_id=conversation.id)


async def test_deleting_a_conversation_deletes_its_items(stack: Stack, client: openai.AsyncOpenAI) -> None:
    conversation = await client.conversations.create(items=[_message("a"), _message("b")])

    def count(tx: Any) -> int:
        mine = ConversationItemRow.conversation_id == conversation.id
        return tx.scalar(select(func.count()).select_from(ConversationItemRow).where(mine))

    assert await stack.store.database.read(count) == 2
    await client.conversations.delete(conversation.id)
    assert await stack.store.database.read(count) == 0
    with pytest.raises(openai.NotFoundError, match=f"Conversation with id '{conversation.id}' not found"):
        await client.conversations.items.list(conversation.id)


async def test_bad_requests_are_400s_in_openais_envelope(client: openai.AsyncOpenAI, raw: httpx.AsyncClient) -> None:
    conversation = await client.conversations.create(items=[{"id": "mine", **_message("hi")}])
    too_many = [_message(str(i)) for i in range(21)]
    refusals = {
        "21 items on create": client.conversations.create(items=too_many),
        "21 items added": client.conversations.items.create(conversation.id, items=too_many),
        "17 metadata pairs": client.conversations.create(metadata={f"k{i}": "v" for i in range(17)}),
        "a 65-character key": client.conversations.update(conversation.id, metadata={"k" * 65: "v"}),
        "a 513-character value": client.conversations.create(metadata={"k": "v" * 513}),
        "an id the conversation has": client.conversations.items.create(
            conversation.id, items=[{"id": "mine", **_message("again")}]
        ),
        "an id twice in one request": client.conversations.create(
            items=[{"id": "twice", **_message("a")}, {"id": "twice", **_message("b")}]
        ),
        "an item without type or role": client.conversations.create(items=[{"content": "hi"}]),
        "a message without a role": client.conversations.create(items=[{"type": "message", "content": "hi"}]),
        "an unknown role": client.conversations.create(items=[{"role": "robot", "content": "hi"}]),
        "a function call without a call_id": client.conversations.create(
            items=[{"type": "function_call", "name": "f", "arguments": "{}"}]
        ),
    }
    messages = {}
    for what, request in refusals.items():
        with pytest.raises(openai.BadRequestError) as refused:
            await request
        assert refused.value.body["type"] == "invalid_request_error", what
        messages[what] = refused.value.body["message"]
    assert "at most 20 items" in messages["21 items on create"]
    assert "already in conversation" in messages["an id the conversation has"]
    assert "'twice'" in messages["an id twice in one request"]
    assert "16 items" in messages["17 metadata pairs"]
    assert [item.id for item in (await client.conversations.items.list(conversation.id)).data] == ["mine"]

    for query in ({"limit": 0}, {"limit": 101}, {"order": "sideways"}):
        listed = await raw.get(f"/v1/conversations/{conversation.id}/items", params=query)
        assert listed.status_code == 400, (query, listed.text)
        assert set(listed.json()["error"]) == {"message", "type", "param", "code"}
    for body in (b"{not json", b'{"items": "no"}', b"[]"):
        posted = await raw.post(f"/v1/conversations/{conversation.id}/items", content=body)
        assert posted.status_code == 400, (body, posted.text)
        assert posted.json()["error"]["type"] == "invalid_request_error"
    unknown_cursor = await raw.get(f"/v1/conversations/{conversation.id}/items", params={"after": "msg_gone"})
    assert unknown_cursor.status_code == 404
    assert unknown_cursor.json()["error"]["param"] == "after"


async def test_include_is_accepted_in_both_spellings(client: openai.AsyncOpenAI, raw: httpx.AsyncClient) -> None:
    conversation = await client.conversations.create(items=[_message("hi")])
    include = ["message.output_text.logprobs"]

    listed = await client.conversations.items.list(conversation.id, include=include)
    one = await client.conversations.items.retrieve(listed.data[0].id, conversation_id=conversation.id, include=include)
    added = await client.conversations.items.create(conversation.id, items=[_message("more")], include=include)

    assert one.id == listed.data[0].id and len(added.data) == 1
    plain = await raw.get(f"/v1/conversations/{conversation.id}/items", params={"include": include})
    assert plain.status_code == 200 and len(plain.json()["data"]) == 2


@pytest.fixture(scope="module")
def keyed_api(stack: Stack) -> Iterator[str]:
    with stack.other_api(
        stack.settings.model_copy(update=dict(api_keys=("conv-owner-0123", "conv-other-4567")))
    ) as url:
        yield url


def _foreign_requests(conversation_id: str, item_id: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    conversation = f"/v1/conversations/{conversation_id}"
    return [
        ("get", conversation, None),
        ("post", conversation, {"metadata": {"stolen": "yes"}}),
        ("post", f"{conversation}/items", {"items": [_message("intruder")]}),
        ("get", f"{conversation}/items", None),
        ("get", f"{conversation}/items/{item_id}", None),
        ("delete", f"{conversation}/items/{item_id}", None),
        ("delete", conversation, None),
    ]


async def test_another_tenants_conversation_is_not_found_on_every_route(keyed_api: str) -> None:
    async with _client(keyed_api, "conv-owner-0123") as owner:
        conversation = await owner.conversations.create(items=[_message("mine")], metadata={"owner": "me"})
        item = (await owner.conversations.items.list(conversation.id)).data[0]

    async with httpx.AsyncClient(
        base_url=keyed_api, headers={"Authorization": "Bearer conv-other-4567"}, timeout=60
    ) as other:
        for (method, path, body), (_, unknown_path, _) in zip(
            _foreign_requests(conversation.id, item.id),
            _foreign_requests("conv_" + "0" * 48, item.id),
            strict=True,
        ):
            refused = await other.request(method, path, json=body)
            assert refused.status_code == 404, (method, path, refused.text)
            never = await other.request(method, unknown_path, json=body)
            # Exactly what an id that never existed gets, but for the id itself: the answer confirms nothing.
            assert refused.json()["error"]["message"].replace(conversation.id, "ID") == never.json()["error"][
                "message"
            ].replace("conv_" + "0" * 48, "ID")
        assert (await other.post("/v1/conversations", json={})).status_code == 200  # a conversation of its own

    async with _client(keyed_api, "conv-owner-0123") as owner:
        assert (await owner.conversations.retrieve(conversation.id)).metadata == {"owner": "me"}
        assert [i.id for i in (await owner.conversations.items.list(conversation.id)).data] == [item.id]
    walked = {
        (method, re.sub(r"conv_\w+", "{conversation_id}", path))
        for method, path, _ in _foreign_requests("conv_x", "ITEM")
    }
    walked = {(method, path.replace("ITEM", "{item_id}")) for method, path in walked} | {("post", "/v1/conversations")}
    assert walked == CONVERSATION_ROUTES


async def test_openai_agents_conversation_session_keeps_its_history(client: openai.AsyncOpenAI) -> None:
    session = OpenAIConversationsSession(openai_client=client)
    history = [_message(f"q{i}") if i % 2 == 0 else {"role": "assistant", "content": f"a{i}"} for i in range(25)]

    await session.add_items(history)  # two requests: 20 items, then 5

    assert CONVERSATION_ID.match(session.session_id)
    items = await session.get_items()
    assert [item["content"][0]["text"] for item in items] == [f"q{i}" if i % 2 == 0 else f"a{i}" for i in range(25)]
    assert [item["content"][0]["text"] for item in await session.get_items(limit=3)] == ["q22", "a23", "q24"]
    popped = await session.pop_item()
    assert popped is not None and popped["content"][0]["text"] == "q24"
    assert len(await session.get_items()) == 24
    conversation_id = session.session_id
    await session.clear_session()
    with pytest.raises(openai.NotFoundError):
        await client.conversations.retrieve(conversation_id)


async def test_reading_items_first_settles_the_conversation(stack: Stack) -> None:
    """The hook the Responses routes set: what it appends before a read is in that read, in order."""
    app = create_app(stack.settings)
    settled: list[tuple[str, str]] = []

    async def settle(services: Services, tenant: str, conversation_id: str) -> None:
        settled.append((tenant, conversation_id))
        finished: dict[str, Any] = {
            "id": f"msg_settled_{len(settled)}",
            "type": "message",
            "role": "assistant",
            "content": [],
        }
        await services.store.conversations.append_items(
            tenant, conversation_id, [Item(finished["id"], finished)], datetime.now(UTC)
        )

    server = ThreadedServer(app, free_port()).start()
    try:
        app.state.services = dataclasses.replace(app.state.services, settle_conversation=settle)
        async with _client(server.url) as client:
            conversation = await client.conversations.create(items=[_message("question")])
            listed = await client.conversations.items.list(conversation.id, order="asc")
            retrieved = await client.conversations.items.retrieve("msg_settled_2", conversation_id=conversation.id)
    finally:
        server.stop()

    assert [item.id for item in listed.data][1:] == ["msg_settled_1"]
    assert retrieved.role == "assistant"
    assert settled == [("default", conversation.id)] * 2
