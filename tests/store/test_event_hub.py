"""The event hub that feeds every SSE stream of an API process: it survives store errors, and no
stream waits on another's backlog."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
import uuid
from collections.abc import Coroutine
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

import api.streams.event_hub
from api.streams.event_hub import EventHub
from domain.agents import Agent, AgentConfig
from domain.content import UserMessage
from domain.events import KeyedEvent
from domain.turns import TurnStatus
from knowledge.engines import vector_index
from store.database import open_database
from store.pg_wake import PostgresWakeReceiver
from store.repository import Store
from store.upgrade import upgrade_store
from store.wake import WakeReceiver, WakeSender
from tests.support.databases import _admin, postgres_database
from tests.support.rest import create_agent, create_session, final_turn, sse_events
from tests.support.scripted_model import ScriptedModel, text, tool_call
from tests.support.stack import Stack
from workflows.contracts import turn_workflow_id


def _set_events_table(store: Store, present: bool) -> Coroutine[Any, Any, Any]:
    """A real store error: the events table disappears under the API (renamed), then comes back."""
    old, new = ("turn_events_away", "turn_events") if present else ("turn_events", "turn_events_away")
    return store.database.write(lambda tx: tx.exec_driver_sql(f"ALTER TABLE {old} RENAME TO {new}"))


class _Follower(threading.Thread):
    """Follows one turn's SSE stream in the background, keeping what it has received."""

    def __init__(self, url: str, timeout: float = 60) -> None:
        super().__init__(daemon=True)
        self._url, self._timeout = url, timeout
        self.events: list[tuple[int | None, dict]] = []
        self.done = threading.Event()

    def run(self) -> None:
        try:
            with httpx.Client(timeout=self._timeout) as http, http.stream("GET", self._url) as response:
                body = ""
                for chunk in response.iter_text():
                    body += chunk
                    self.events = sse_events(httpx.Response(200, text=body.rsplit("\n\n", 1)[0] + "\n\n"))
        except httpx.HTTPError:
            pass
        finally:
            self.done.set()


def test_a_store_error_in_the_hub_does_not_silence_streams(
    stack: Stack, http: httpx.Client, model: ScriptedModel
) -> None:
    model.script(tool_call("get_boiling_point", {"liquid_name": "water"}), text("Water boils at 100."))
    agent_id = create_agent(http)
    session_id = create_session(http, agent_id)
    turns = f"/v1/agents/{agent_id}/session/{session_id}/turn"
    created = http.post(turns, json={"messages": [{"role": "user", "content": "boil"}], "stream": True})
    paused, last_id = final_turn(created), sse_events(created)[-1][0]
    follower = _Follower(f"{stack.base_url}{turns}/{paused['turn_id']}/events?after={last_id}")
    follower.start()
    time.sleep(0.5)  # the follower is subscribed: the hub polls for it

    stack.background.run(_set_events_table(stack.store, present=False))
    time.sleep(1.0)  # the hub's polls fail meanwhile
    not_ready = http.get("/readyz")
    assert not_ready.status_code == 503
    assert not_ready.json()["checks"] == {"store": "ok", "temporal": "ok", "streams": "unavailable"}
    assert "turn_events" not in not_ready.text  # the store's error is for the log, not the answer
    stack.background.run(_set_events_table(stack.store, present=True))
    time.sleep(2.5)  # the next poll, after at most the 2 s backoff
    assert http.get("/readyz").json()["status"] == "ready"

    call = paused["output_message"]["tool_calls"][0]
    answer = {"call_id": call["call_id"], "tool_name": call["tool_name"], "content": "100 C"}
    resumed = http.post(f"{turns}/{paused['turn_id']}/resume", json={"tool_responses": [answer], "stream": True})
    assert resumed.status_code == 200
    assert sse_events(resumed)[-1][1]["event"]["payload"]["event_type"] == "turn_complete"
    assert follower.done.wait(30)
    assert follower.events, "the follower got nothing after the store came back"
    assert follower.events[-1][1]["event"]["payload"]["event_type"] == "turn_complete"


async def test_the_hub_reports_failing_polls_until_they_work_again(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    await upgrade_store(url)
    database = open_database(url)
    store = Store(database, vector_index(url))
    hub = EventHub(store)
    assert hub.problem() == "the event hub is not running"
    poller = asyncio.create_task(hub.run())
    try:
        async with hub.subscribe("some-turn", 0):
            await asyncio.sleep(0.1)
            assert hub.problem() is None
            await _set_events_table(store, present=False)
            await asyncio.sleep(0.3)
            problem = hub.problem()
            assert problem is not None and "store polls have failed" in problem and "turn_events" in problem
            await _set_events_table(store, present=True)
            await asyncio.sleep(2.5)  # the longest backoff between retries is 2 s
            assert hub.problem() is None
            assert not poller.done()
    finally:
        poller.cancel()
        await database.dispose()


async def _store_with_a_running_turn(tmp_path: Path, url: str | None = None) -> str:
    """A store (its URL; a SQLite file unless `url`) holding agent a1, its session s1 and its running turn-1."""
    url = url or f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    await upgrade_store(url)
    database = open_database(url)
    store = Store(database, vector_index(url))
    config = AgentConfig(model="m", instructions="i")
    await store.turns.create_agent("t", Agent(agent_id="a1", agent_config=config, created_at=datetime.now(UTC)))
    await store.turns.create_session("a1", "s1", "name", datetime.now(UTC))
    await store.turns.begin_turn("a1", "s1", "turn-1", [UserMessage(content="hi")], datetime.now(UTC))
    await database.dispose()
    return url


def _poll_every(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    monkeypatch.setattr(api.streams.event_hub, "POLL_MIN_SECONDS", seconds)
    monkeypatch.setattr(api.streams.event_hub, "POLL_MAX_SECONDS", seconds)


def _reads_of(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """When the hub read events from `store` (its polls), as they happen."""
    reads: list[float] = []
    read_events = store.turns.events_after

    async def counted_read(*args: Any, **kwargs: Any) -> Any:
        reads.append(time.monotonic())
        return await read_events(*args, **kwargs)

    monkeypatch.setattr(store.turns, "events_after", counted_read)
    return reads


async def test_another_processs_write_wakes_the_hub_without_waiting_for_a_poll(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer (a worker, here a second Store on its own engine: no in-process listener links the
    two) announces its events through the wake directory; the hub, told to poll only every 5 s,
    delivers them at once."""
    _poll_every(monkeypatch, 5.0)
    url = await _store_with_a_running_turn(tmp_path)
    reader_db, writer_db = open_database(url), open_database(url)
    reader, writer = Store(reader_db, vector_index(url)), Store(writer_db, vector_index(url))
    sender = WakeSender(tmp_path / "wake")
    writer.turns.on_events_written(sender)
    hub = EventHub(reader)
    receiver = WakeReceiver(tmp_path / "wake", hub.wake)
    assert receiver.open()
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as killed:  # an API SIGKILLed: its socket stays
        killed.bind(str(tmp_path / "wake" / "api-killed.sock"))
    poller = asyncio.create_task(hub.run())
    try:
        async with hub.subscribe("turn-1", 0) as subscription:
            await asyncio.sleep(0.2)  # the hub's first poll found nothing: the next is 5 s away
            written_at = time.monotonic()
            await writer.turns.save_turn_progress("turn-1", events=[KeyedEvent(key="k", body={"n": 1})])
            event = await asyncio.wait_for(subscription.events.get(), timeout=4)
            assert event.body == {"n": 1}
            assert time.monotonic() - written_at < 1.0
    finally:
        poller.cancel()
        receiver.close()
        sender.close()
        await reader_db.dispose()
        await writer_db.dispose()
    # A stopped API leaves no socket behind; a killed one's is removed by the first writer it refuses.
    assert not list((tmp_path / "wake").glob("*.sock"))


async def test_a_write_on_another_host_wakes_the_hub_through_postgresql(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No wake directory in common (another host): the writer's transaction notifies and the hub, told to
    poll only every 5 s, delivers at once; its own process's writes wake nobody; and the listener comes
    back after the database ends its connection."""
    _poll_every(monkeypatch, 5.0)
    with postgres_database() as base_url:
        url = await _store_with_a_running_turn(tmp_path, base_url)
        reader_db, writer_db = open_database(url), open_database(url)
        reader, writer = Store(reader_db, vector_index(url)), Store(writer_db, vector_index(url))
        hub = EventHub(reader)
        own_wakes: list[float] = []
        other_process = PostgresWakeReceiver(url, hub.wake, own="another-process")
        this_process = PostgresWakeReceiver(url, lambda: own_wakes.append(time.monotonic()))  # the writer's token
        other_process.start()
        this_process.start()
        poller = asyncio.create_task(hub.run())
        try:

            async def written_and_delivered(n: int) -> tuple[float, float]:
                async with hub.subscribe("turn-1", await reader.turns.last_event_id("turn-1")) as subscription:
                    await asyncio.sleep(0.2)  # listening, and the hub's first poll found nothing: the next is 5 s away
                    written_at = time.monotonic()
                    await writer.turns.save_turn_progress("turn-1", events=[KeyedEvent(key=f"k{n}", body={"n": n})])
                    event = await asyncio.wait_for(subscription.events.get(), timeout=4)
                    assert event.body == {"n": n}
                    return written_at, time.monotonic() - written_at

            written_at, took = await written_and_delivered(1)
            assert took < 1.0
            await asyncio.sleep(0.2)
            assert not [at for at in own_wakes if at >= written_at]  # a process is not told of its own writes
            await asyncio.to_thread(
                _admin, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%'"
            )
            await asyncio.sleep(1.5)  # reconnecting after 0.5 s
            assert (await written_and_delivered(2))[1] < 1.0
        finally:
            poller.cancel()
            await other_process.close()
            await this_process.close()
            await reader_db.dispose()
            await writer_db.dispose()


async def test_events_written_in_this_process_reach_streams_as_written_and_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker inside the API writes through the hub's own Store: a stream caught up with the turn gets
    the events, with their ids, without the hub reading them back; a stream still behind gets them from
    a poll, after the ones it lacks, each once. The API's own wake socket gets no datagram for them."""
    _poll_every(monkeypatch, 5.0)
    url = await _store_with_a_running_turn(tmp_path)
    database = open_database(url)
    store = Store(database, vector_index(url))
    await store.turns.save_turn_progress("turn-1", events=[KeyedEvent(key="old", body={"n": 0})])
    hub = EventHub(store)
    own_wakes: list[float] = []
    own = WakeReceiver(tmp_path / "wake", lambda: own_wakes.append(time.monotonic()))
    assert own.open()
    sender = WakeSender(tmp_path / "wake", own=own.path)
    store.turns.on_events_written(sender)
    read_events = store.turns.events_after
    reads = _reads_of(store, monkeypatch)
    poller = asyncio.create_task(hub.run())
    try:
        async with hub.subscribe("turn-1", 0) as caught_up:
            old = await asyncio.wait_for(caught_up.events.get(), timeout=4)  # the subscription's own poll
            await asyncio.sleep(0.2)
            reads.clear()
            await store.turns.save_turn_progress(
                "turn-1", events=[KeyedEvent(key=f"k{n}", body={"n": n}) for n in (1, 2)]
            )
            handed = [await asyncio.wait_for(caught_up.events.get(), timeout=1) for _ in range(2)]
            assert reads == []
            stored = (await read_events([("turn-1", 0)]))[("turn-1", 0)]
            assert [old, *handed] == stored
            assert [event.body for event in stored] == [{"n": 0}, {"n": 1}, {"n": 2}]

            async with hub.subscribe("turn-1", 0) as behind:
                await store.turns.save_turn_progress("turn-1", events=[KeyedEvent(key="k3", body={"n": 3})])
                got = [await asyncio.wait_for(behind.events.get(), timeout=4) for _ in range(4)]
                assert [event.body["n"] for event in got] == [0, 1, 2, 3]
                assert (await asyncio.wait_for(caught_up.events.get(), timeout=1)).body == {"n": 3}
                await asyncio.sleep(0.3)
                assert behind.events.empty() and caught_up.events.empty()
        # The stream of a new turn can subscribe after the turn's first writes (the API runs the turn and
        # starts it eagerly): the hub knows of them, and catches it up at once.
        async with hub.subscribe("turn-1", 0, new_turn=True) as late:
            got = [await asyncio.wait_for(late.events.get(), timeout=1) for _ in range(4)]
            assert [event.body["n"] for event in got] == [0, 1, 2, 3]
        assert own_wakes == []
    finally:
        poller.cancel()
        own.close()
        sender.close()
        await database.dispose()


async def test_a_new_turns_stream_is_not_caught_up_by_a_read_and_still_gets_what_others_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stream of a turn its request has just begun starts with no read (there is nothing to catch up on);
    events another process writes, with no wake-up to announce them, still come by the timer's poll."""
    _poll_every(monkeypatch, 0.3)
    url = await _store_with_a_running_turn(tmp_path)
    reader_db, writer_db = open_database(url), open_database(url)
    reader, writer = Store(reader_db, vector_index(url)), Store(writer_db, vector_index(url))
    hub = EventHub(reader)
    reads = _reads_of(reader, monkeypatch)
    poller = asyncio.create_task(hub.run())
    try:
        await asyncio.sleep(0.05)
        async with hub.subscribe("turn-1", 0, new_turn=True) as subscription:
            await asyncio.sleep(0.1)
            assert reads == []
            await writer.turns.save_turn_progress("turn-1", events=[KeyedEvent(key="k", body={"n": 1})])
            event = await asyncio.wait_for(subscription.events.get(), timeout=2)
            assert event.body == {"n": 1}
        async with hub.subscribe("turn-1", 0) as replay:  # not new: caught up at once
            assert (await asyncio.wait_for(replay.events.get(), timeout=0.2)).body == {"n": 1}
    finally:
        poller.cancel()
        await reader_db.dispose()
        await writer_db.dispose()


def test_a_long_replay_from_the_start_does_not_wait_on_another_stream(stack: Stack, http: httpx.Client) -> None:
    agent_id = create_agent(http)
    quiet, long = str(uuid.uuid4()), str(uuid.uuid4())
    quiet_session, long_session = create_session(http, agent_id), create_session(http, agent_id)
    now = datetime.now(UTC)
    progress = {"event": {"payload": {"event_type": "step_progress", "step_type": "inference"}}}
    complete = {"event": {"payload": {"event_type": "turn_complete"}}}

    async def seed() -> None:
        # A running turn that has written nothing yet (its workflow waits on a queue nobody polls)…
        await stack.store.turns.begin_turn(agent_id, quiet_session, quiet, [UserMessage(content="wait")], now)
        await stack.client.start_workflow(
            "AgentTurn", {}, id=turn_workflow_id(quiet), task_queue=f"nobody-{uuid.uuid4()}"
        )
        # …and a finished one with a long event log.
        await stack.store.turns.begin_turn(agent_id, long_session, long, [UserMessage(content="many")], now)
        events = [KeyedEvent(key=f"e{i}", body=progress) for i in range(1500)]
        await stack.store.turns.save_turn_progress(
            long, events=[*events, KeyedEvent(key="end", body=complete)], status=TurnStatus.COMPLETED
        )

    stack.background.run(seed())
    follower = _Follower(f"{stack.base_url}/v1/agents/{agent_id}/session/{quiet_session}/turn/{quiet}/events")
    follower.start()
    try:
        time.sleep(0.5)  # the quiet stream is followed from 0
        started = time.monotonic()
        replay = http.get(f"/v1/agents/{agent_id}/session/{long_session}/turn/{long}/events", timeout=30)
        took = time.monotonic() - started

        events = sse_events(replay)
        assert len(events) == 1501, f"{len(events)} events; the last: {events[-1]}"
        assert events[-1][1] == complete
        assert took < 4, f"the replay took {took:.1f} s"
        assert not follower.done.is_set()
    finally:
        stack.background.run(stack.client.get_workflow_handle(turn_workflow_id(quiet)).terminate())
