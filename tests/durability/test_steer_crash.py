"""An accepted `response.steer` survives a SIGKILL of the API process, or of the worker, and is applied once: after
the restart the steered response's successor is listed by `GET /v1/responses` (its `previous_response_id` names
the steered one), and the model reads the steering input once (in its one request, or in the one a crash made
again). The same holds for an Agents API session's message that steers its active turn."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
import time
from typing import Any

import httpx
import pytest
from openai import AsyncOpenAI, OpenAI

from tests.support.processes import EVENT_SECONDS, ProcessStack, wait_until
from tests.support.scripted_model import text
from tests.support.stack import SCRIPTED_MODEL
from workflows.contracts import steer_cut_key

pytestmark = pytest.mark.processes

STEER = "Mention the rain."


async def _steer_while_held(processes: ProcessStack, connection: Any) -> str:
    """Create a response on the socket and steer it while its model call is held (under way in the worker); the
    steered response's id once the steer is accepted."""
    await connection.response.create(model=SCRIPTED_MODEL, input="weather?")
    steered = ""
    while True:
        event: Any = await connection.recv()
        if event.type == "response.in_progress":
            steered = event.response.id
            await asyncio.to_thread(processes.wait_for_model_requests, 1)
            await connection.response.steer(previous_response_id=steered, input=STEER)
        if event.type == "response.steer.accepted":
            assert event.steer.previous_response_id == steered
            return steered
        assert event.type not in ("response.steer.failed", "error"), event


def _client(processes: ProcessStack) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=f"{processes.url}/v1", api_key="unused", max_retries=0)


def _successor(processes: ProcessStack, steered: str) -> dict[str, Any]:
    """The completed response whose previous_response_id is the steered one, as a reconnecting client finds it."""
    deadline = time.monotonic() + EVENT_SECONDS
    with httpx.Client(base_url=processes.url, timeout=30) as http:
        while time.monotonic() < deadline:
            listed = http.get("/v1/responses", params={"limit": 20}).json()["data"]
            successors = [item for item in listed if item["previous_response_id"] == steered]
            assert len(successors) <= 1, successors
            if successors and successors[0]["status"] == "completed":
                return successors[0]
            time.sleep(0.2)
    raise AssertionError(f"no completed successor of {steered}")


def _wait_for_mark(processes: ProcessStack, response_id: str) -> None:
    """Until the API has marked a steer of the response in the store (workflows/contracts.py `steer_cut_key`)."""

    def marked() -> bool:
        with sqlite3.connect(processes.data_dir / "store.db") as store:
            query = "SELECT 1 FROM turn_events WHERE key = ?"
            return store.execute(query, (steer_cut_key(response_id),)).fetchone() is not None

    wait_until(marked, "the steer's mark")


def _steered_requests(processes: ProcessStack) -> int:
    return sum(str(request["messages"]).count(STEER) for request in processes.model.requests)


async def test_a_steer_accepted_before_the_api_dies_is_applied_once(processes: ProcessStack) -> None:
    held = threading.Event()
    processes.model.script(text("It is cold.", held_until=held), text("And it rains."))
    socket = _client(processes).beta.responses.connect()
    try:
        steered = await _steer_while_held(processes, await socket.__aenter__())
        processes.kill(processes.api)  # with the socket open: its client did not leave, the API died
        with contextlib.suppress(Exception):
            await socket.__aexit__(None, None, None)
        processes.start_api()
    finally:
        held.set()
    successor = _successor(processes, steered)
    assert successor["output"][0]["content"][0]["text"].strip() == "And it rains."
    assert len(processes.model.requests) == 2  # the held call was answered (cut at its first token), not asked again
    assert _steered_requests(processes) == 1


async def _steered_then_successor(connection: Any) -> list[Any]:
    """The steered response's terminal event's response, then its successor's, as they arrive on the socket."""
    ended: list[Any] = []
    while len(ended) < 2:
        event: Any = await connection.recv()
        assert event.type not in ("response.failed", "error"), event
        if event.type in ("response.completed", "response.incomplete"):
            ended.append(event.response)
    return ended


async def test_a_steer_accepted_before_the_worker_dies_is_applied_once(processes: ProcessStack) -> None:
    held = threading.Event()
    # Steered before its first token, the first call is cut at once; the worker dies during the successor's call,
    # which its retry on the new worker makes again.
    processes.model.script(text("never said", held_until=held), text("lost", held_until=held), text("And it rains."))
    try:
        async with _client(processes).beta.responses.connect() as connection:
            steered = await _steer_while_held(processes, connection)
            await asyncio.to_thread(processes.wait_for_model_requests, 2)  # the successor's call, in the worker
            processes.kill(processes.worker)
            processes.start_worker()
            held.set()
            successor = await asyncio.to_thread(_successor, processes, steered)
    finally:
        held.set()
    async with httpx.AsyncClient(base_url=processes.url, timeout=30) as http:
        first = (await http.get(f"/v1/responses/{steered}")).json()
    assert first["status"] == "incomplete" and first["incomplete_details"] == {"reason": "steered"}
    assert first["output"] == []  # cut before its first token
    assert successor["output"][0]["content"][0]["text"].strip() == "And it rains."
    assert str(processes.model.requests[-1]["messages"]).count(STEER) == 1  # the model read it once


async def test_a_reply_cut_by_a_steer_after_its_worker_died_is_not_asked_again(processes: ProcessStack) -> None:
    """The worker dies while the reply streams; the steer is taken by the next worker: the call's retry ends the
    response with the text that streamed before the crash, without asking the model again."""
    reply = " ".join(f"word{number}" for number in range(100))
    processes.model.script(text(reply, token_delay_seconds=0.2), text("And it rains."))
    async with _client(processes).beta.responses.connect() as connection:
        await connection.response.create(model=SCRIPTED_MODEL, input="weather?")
        shown = ""
        while not shown:
            event: Any = await connection.recv()
            if event.type == "response.created":
                steered = event.response.id
            if event.type == "response.output_text.delta":
                shown += event.delta
        processes.kill(processes.worker)
        # Marked while no worker runs, so the call's retry on the next worker finds the mark (the update waits for it).
        await connection.response.steer(previous_response_id=steered, input=STEER)
        await asyncio.to_thread(_wait_for_mark, processes, steered)
        processes.start_worker()
        first, successor = await _steered_then_successor(connection)
    text_shown = first.output[0].content[0].text
    assert first.id == steered and first.status == "incomplete" and first.incomplete_details.reason == "steered"
    assert text_shown.startswith(shown) and reply.startswith(text_shown.strip()) and len(text_shown) < len(reply)
    assert successor.status == "completed" and successor.output[0].content[0].text.strip() == "And it rains."
    assert len(processes.model.requests) == 2  # the cut call was not made again
    assert _steered_requests(processes) == 1
    assert text_shown.strip() in str(processes.model.requests[1]["messages"])


def test_a_session_message_steering_a_turn_survives_the_worker_dying(processes: ProcessStack) -> None:
    """The Agents API's steer (an input message posted during the session's active turn): the 202 means the turn's
    workflow holds it, so a worker killed right after loses nothing and the model reads it once."""
    held = threading.Event()
    processes.model.script(text("lost", held_until=held), text("It is cold."), text("And it rains."))
    client = OpenAI(base_url=f"{processes.url}/v1", api_key="unused", max_retries=0, timeout=60)
    beta = client.beta.agents.sessions
    try:
        session = beta.create(environment={"type": "none"}, agent={"model": SCRIPTED_MODEL}, input="weather?")
        processes.wait_for_model_requests(1)
        content: Any = [{"type": "input_text", "text": STEER}]
        beta.events.create(
            session.id,
            events=[{"type": "agent.session.input.message", "input": [{"role": "user", "content": content}]}],
        )
        processes.kill(processes.worker)
        processes.start_worker()
    finally:
        held.set()
    wait_until(lambda: beta.retrieve(session.id).status == "idle", "the steered turn's end", EVENT_SECONDS * 2)
    assert _steered_requests(processes) == 1
    items = beta.items.list(session.id, order="asc").data
    shown = [(getattr(item, "role", item.type), item.content[0].text.strip()) for item in items]
    assert shown == [
        ("user", "weather?"),
        ("assistant", "It is cold."),
        ("user", STEER),
        ("assistant", "And it rains."),
    ]
