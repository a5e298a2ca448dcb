"""The store on SQLite and on PostgreSQL: same code, configuration only."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Connection, delete

from domain.agents import Agent, AgentConfig, ToolConfig, ToolGroupWithArgs
from domain.content import CompletionMessage, ToolCall, UserMessage
from domain.events import KeyedEvent
from domain.turn_settings import ContextMessage, FunctionTool, TurnSettings
from domain.turns import InferenceStep, TurnStatus
from store.repository import Store
from store.responses.responses import ResponseRecord
from store.turns.records import StoredEvent, TurnConflict, TurnTools
from store.turns.rows import delete_turns
from store.turns.tables import TurnRow, TurnSettingsRow
from tests.support.databases import opened_store

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgresql"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    async with opened_store(request.param, tmp_path) as store:
        yield store


TENANT = "tenant-a"


async def _events(store: Store, turn_id: str, after: int) -> list[StoredEvent]:
    return (await store.turns.events_after([(turn_id, after)]))[(turn_id, after)]


async def _session(store: Store, agent_id: str = "a1", session_id: str = "s1") -> None:
    if await store.turns.get_agent(TENANT, agent_id) is None:
        await store.turns.create_agent(
            TENANT, Agent(agent_id=agent_id, agent_config=AgentConfig(model="m", instructions="i"), created_at=T0)
        )
    await store.turns.create_session(agent_id, session_id, "name", T0)


def _step(turn_id: str, step_id: str, content: str) -> InferenceStep:
    return InferenceStep(
        turn_id=turn_id,
        step_id=step_id,
        started_at=T0,
        completed_at=T0,
        model_response=CompletionMessage(content=content),
    )


async def _finish(store: Store, turn_id: str, content: str) -> None:
    await store.turns.save_turn_progress(
        turn_id,
        new_steps=[(0, _step(turn_id, f"{turn_id}-step", content))],
        status=TurnStatus.COMPLETED,
        output_message=CompletionMessage(content=content),
        completed_at=T0,
    )


async def test_agents_round_trip_with_aware_timestamps_and_pagination(store: Store) -> None:
    for index in range(3):
        config = AgentConfig(model="m", instructions=f"agent {index}")
        await store.turns.create_agent(
            TENANT, Agent(agent_id=f"a{index}", agent_config=config, created_at=T0 + timedelta(seconds=index))
        )

    agent = await store.turns.get_agent(TENANT, "a1")
    assert agent is not None and agent.agent_config.instructions == "agent 1"
    assert agent.created_at == T0 + timedelta(seconds=1) and agent.created_at.tzinfo is not None
    page = await store.turns.list_agents(TENANT, start_index=1, limit=1)
    assert [a.agent_id for a in page.items] == ["a1"] and page.has_more
    assert await store.turns.get_agent("another-tenant", "a1") is None
    assert await store.turns.delete_agent("another-tenant", "a1") is None
    assert await store.turns.delete_agent(TENANT, "a1") == [] and await store.turns.get_agent(TENANT, "a1") is None
    assert await store.turns.delete_agent(TENANT, "a1") is None


async def test_a_session_runs_one_turn_at_a_time(store: Store) -> None:
    await _session(store)
    await store.turns.begin_turn("a1", "s1", "t1", [UserMessage(content="one")], T0)

    with pytest.raises(TurnConflict) as conflict:
        await store.turns.begin_turn("a1", "s1", "t2", [UserMessage(content="two")], T0 + timedelta(seconds=1))
    assert conflict.value.turn_id == "t1" and conflict.value.status == "running"
    assert await store.turns.turn_status("t2") is None

    await _finish(store, "t1", "done")
    await store.turns.begin_turn("a1", "s1", "t2", [UserMessage(content="two")], T0 + timedelta(seconds=1))
    assert await store.turns.turn_status("t2") == TurnStatus.RUNNING


async def test_history_is_the_completed_turns_before_in_time_order(store: Store) -> None:
    await _session(store)
    # Ids sort opposite to time: order must come from started_at, not from keys.
    for index, turn_id in enumerate(["z-first", "m-second", "a-third"]):
        await store.turns.begin_turn("a1", "s1", turn_id, [UserMessage(content=turn_id)], T0 + timedelta(minutes=index))
        await _finish(store, turn_id, f"answer {index}")

    found = await store.turns.conversation_window("s1", "a-third", max_history_bytes=1_000_000)
    assert found is not None
    current, history, config = found
    assert current.turn_id == "a-third"
    assert [t.turn_id for t in history] == ["z-first", "m-second"]
    assert history[1].steps[0].model_response.content == "answer 1"
    assert config is not None and config.model
    window = await store.turns.conversation_window("s1", "a-third", max_history_bytes=1)
    assert window is not None and window[1] == []
    session = await store.turns.get_session("a1", "s1")
    assert session is not None
    assert [t.turn_id for t in session.turns] == ["z-first", "m-second", "a-third"]
    only = await store.turns.get_session("a1", "s1", turn_ids=["a-third"])
    assert only is not None and [t.turn_id for t in only.turns] == ["a-third"]


async def test_a_model_call_sees_what_a_reopened_turn_added_after_an_earlier_call_read_it(store: Store) -> None:
    """The store keeps decoded history between model calls; a turn that gained steps is read again."""
    await _session(store)
    await store.turns.begin_turn("a1", "s1", "t1", [UserMessage(content="one")], T0)
    await _finish(store, "t1", "first answer")
    await store.turns.begin_turn("a1", "s1", "t2", [UserMessage(content="two")], T0 + timedelta(minutes=1))
    found = await store.turns.conversation_window("s1", "t2", max_history_bytes=1_000_000)
    assert found is not None and [len(turn.steps) for turn in found[1]] == [1]
    await _finish(store, "t2", "second answer")
    assert await store.turns.reopen_turn("s1", "t1") is not None
    await store.turns.save_turn_progress(
        "t1",
        new_steps=[(1, _step("t1", "t1-more", "more"))],
        status=TurnStatus.COMPLETED,
        output_message=CompletionMessage(content="more"),
        completed_at=T0,
    )
    await store.turns.begin_turn("a1", "s1", "t3", [UserMessage(content="three")], T0 + timedelta(minutes=2))
    found = await store.turns.conversation_window("s1", "t3", max_history_bytes=1_000_000)
    assert found is not None
    assert [[step.model_response.content for step in turn.steps] for turn in found[1]] == [
        ["first answer", "more"],
        ["second answer"],
    ]


async def test_events_are_written_once_per_key_and_read_in_order(store: Store) -> None:
    await _session(store)
    await store.turns.begin_turn("a1", "s1", "t1", [UserMessage(content="hi")], T0)
    first = [KeyedEvent(key=f"k{i}", body={"n": i}) for i in range(3)]

    await store.turns.save_turn_progress("t1", events=first)
    await store.turns.save_turn_progress("t1", events=[*first, KeyedEvent(key="k3", body={"n": 3})])  # a retried write

    events = await _events(store, "t1", 0)
    assert [e.body["n"] for e in events] == [0, 1, 2, 3]
    assert [e.event_id for e in events] == sorted(e.event_id for e in events)
    assert [e.body["n"] for e in await _events(store, "t1", events[1].event_id)] == [2, 3]
    assert await store.turns.event_id("t1", "k2") == events[2].event_id


async def test_concurrent_writers_of_one_turn_never_let_a_reader_skip_an_event(store: Store) -> None:
    await _session(store)
    await store.turns.begin_turn("a1", "s1", "t1", [UserMessage(content="hi")], T0)

    async def writer(name: str) -> None:
        for i in range(15):
            await store.turns.save_turn_progress("t1", events=[KeyedEvent(key=f"{name}{i}", body={"w": name, "i": i})])

    seen: list[int] = []

    async def reader() -> None:
        after = 0
        while len(seen) < 45:
            for event in await _events(store, "t1", after):
                seen.append(event.event_id)
                after = event.event_id
            await asyncio.sleep(0)

    await asyncio.wait_for(asyncio.gather(writer("a"), writer("b"), writer("c"), reader()), timeout=60)
    assert len(seen) == len(set(seen)) == 45


async def test_deleting_a_session_removes_its_turns_steps_and_events(store: Store) -> None:
    await _session(store)
    await store.turns.begin_turn("a1", "s1", "t1", [UserMessage(content="hi")], T0)
    await store.turns.save_turn_progress("t1", events=[KeyedEvent(key="k", body={})])
    await _finish(store, "t1", "done")

    assert await store.turns.delete_session("a1", "s1") == []

    assert await store.turns.get_session("a1", "s1") is None
    assert await store.turns.turn_status("t1") is None
    assert await _events(store, "t1", 0) == []
    assert await store.turns.delete_session("a1", "s1") is None


async def test_deletes_name_the_unfinished_turns_whose_workflows_must_stop(store: Store) -> None:
    await _session(store, "a1", "s1")
    await _session(store, "a1", "s2")
    await _session(store, "a2", "s3")
    await store.turns.begin_turn("a1", "s1", "done", [UserMessage(content="hi")], T0)
    await _finish(store, "done", "bye")
    await store.turns.begin_turn("a1", "s1", "paused", [UserMessage(content="hi")], T0 + timedelta(seconds=1))
    await store.turns.save_turn_progress("paused", status=TurnStatus.AWAITING_INPUT)
    await store.turns.begin_turn("a1", "s2", "running", [UserMessage(content="hi")], T0)
    await store.turns.save_turn_progress("running", events=[KeyedEvent(key="k", body={})])
    await store.turns.begin_turn("a2", "s3", "other", [UserMessage(content="hi")], T0)

    assert await store.turns.unfinished_turn_ids("a1") == ["paused", "running"]
    assert await store.turns.unfinished_turn_ids("a1", "s2") == ["running"]
    assert await store.turns.unfinished_turn_ids("a2", "s1") == []
    assert await store.turns.delete_session("a2", "s1") is None  # not a2's session

    assert await store.turns.delete_session("a1", "s1") == ["paused"]
    assert await store.turns.delete_agent(TENANT, "a1") == ["running"]

    assert await store.turns.turn_status("running") is None and await _events(store, "running", 0) == []
    assert await store.turns.unfinished_turn_ids("a2") == ["other"]
    with pytest.raises(LookupError):  # a late write of a deleted turn's workflow brings nothing back
        await store.turns.save_turn_progress("running", events=[KeyedEvent(key="late", body={})])
    assert await _events(store, "running", 0) == []


async def test_abandoning_a_turn_fails_it_and_frees_the_session(store: Store) -> None:
    await _session(store)
    await store.turns.begin_turn("a1", "s1", "t1", [UserMessage(content="hi")], T0)

    await store.turns.abandon_turn("t1", "Its workflow was terminated.")

    turn = await store.turns.get_turn("s1", "t1")
    assert turn is not None and turn.status == TurnStatus.FAILED and turn.error == "Its workflow was terminated."
    assert "error" in (await _events(store, "t1", 0))[-1].body
    await store.turns.begin_turn("a1", "s1", "t2", [UserMessage(content="again")], T0 + timedelta(seconds=1))


async def test_an_ended_turn_keeps_its_end_and_its_one_closing_event(store: Store) -> None:
    await _session(store)
    await store.turns.begin_turn("a1", "s1", "t1", [UserMessage(content="hi")], T0)
    answer = CompletionMessage(content="the answer")
    done = KeyedEvent(key="turn:complete:1", body={"event": {"payload": {"event_type": "turn_complete"}}})
    assert (
        await store.turns.save_turn_progress(
            "t1",
            new_steps=[(0, _step("t1", "i1", "the answer"))],
            status=TurnStatus.COMPLETED,
            output_message=answer,
            completed_at=T0,
            closing_event=lambda _turn: done,
        )
        is None
    )

    cancel = KeyedEvent(key="turn:cancelled:1", body={"error": {"message": "Turn t1 was cancelled."}})
    kept = await store.turns.save_turn_progress(
        "t1",
        events=[KeyedEvent(key="late", body={})],
        status=TurnStatus.CANCELLED,
        completed_at=T0 + timedelta(seconds=1),
        error="Turn t1 was cancelled.",
        closing_event=lambda _turn: cancel,
    )
    await store.turns.abandon_turn("t1", "Its workflow was terminated.")
    await store.turns.save_turn_progress("t1", status=TurnStatus.RUNNING)

    turn = await store.turns.get_turn("s1", "t1")
    assert turn is not None and kept == turn
    assert turn.status == TurnStatus.COMPLETED and turn.output_message == answer and turn.error is None
    assert turn.completed_at == T0 and len(turn.steps) == 1
    assert [event.body for event in await _events(store, "t1", 0)] == [done.body]
    after = KeyedEvent(key="after", body={"runtime": {"kind": "after"}})
    await store.turns.save_turn_progress("t1", events=[after])  # no status: appended as ever
    assert [event.body for event in await _events(store, "t1", 0)] == [done.body, after.body]


async def test_a_reopened_turn_gets_back_the_tools_it_was_started_with(store: Store) -> None:
    await _session(store)
    tools = TurnTools(
        toolgroups=["builtin::calculator", ToolGroupWithArgs(name="mcp::docs", args={"k": 1})],
        tool_config=ToolConfig(tool_choice="required"),
    )
    await store.turns.begin_turn("a1", "s1", "own", [UserMessage(content="hi")], T0, tools)
    await store.turns.save_turn_progress("own", status=TurnStatus.COMPLETED, completed_at=T0)
    await store.turns.begin_turn("a1", "s1", "agents", [UserMessage(content="hi")], T0 + timedelta(seconds=1))
    await store.turns.save_turn_progress("agents", status=TurnStatus.COMPLETED, completed_at=T0)

    assert await store.turns.reopen_turn("s1", "own") == tools
    await store.turns.save_turn_progress("own", status=TurnStatus.COMPLETED, completed_at=T0)
    assert await store.turns.reopen_turn("s1", "agents") == TurnTools()  # the agent's, as it was started


async def test_detached_turns_keep_their_tenant_context_settings_and_pending_calls(store: Store) -> None:
    first = TurnSettings(model="m", instructions="one", function_tools=[FunctionTool(name="f")])
    context: list[ContextMessage] = [UserMessage(content="before"), CompletionMessage(content="answer")]
    await store.turns.begin_detached_turn(TENANT, "d1", [UserMessage(content="now")], context, "set1", first, T0)
    await store.turns.add_turn_settings("d1", "set2", TurnSettings(model="m", instructions="two"))
    await store.turns.add_turn_settings("d1", "set2", TurnSettings(model="m", instructions="retried"))

    assert await store.turns.turn_tenant("d1") == TENANT
    assert await store.turns.turn_settings("set1") == first
    settings = await store.turns.turn_settings("set2")
    assert settings is not None and settings.instructions == "two"
    assert await store.turns.turn_settings("unknown") is None
    found = await store.turns.detached_context("d1")
    assert found is not None and found[1] == context and found[0].session_id == ""
    turn = await store.turns.get_turn(None, "d1")
    assert turn is not None and turn.input_messages == [UserMessage(content="now")]

    paused = CompletionMessage(content="", tool_calls=[ToolCall(call_id="c1", tool_name="f")])
    await store.turns.save_turn_progress(
        "d1", status=TurnStatus.AWAITING_INPUT, output_message=paused, awaiting=["c1", "mcpr_1"]
    )
    assert await store.turns.pending_calls(TENANT, ["c1", "mcpr_1", "c2"]) == {"c1": "d1", "mcpr_1": "d1"}
    assert await store.turns.pending_calls("tenant-b", ["c1"]) == {}
    await store.turns.save_turn_progress("d1", status=TurnStatus.RUNNING)
    assert await store.turns.pending_calls(TENANT, ["c1"]) == {}
    await store.turns.save_turn_progress("d1", status=TurnStatus.AWAITING_INPUT, output_message=paused, awaiting=["c1"])
    await store.turns.save_turn_progress("d1", status=TurnStatus.EXPIRED, completed_at=T0)
    assert await store.turns.pending_calls(TENANT, ["c1"]) == {}


async def test_turns_waiting_on_the_same_call_id_are_told_apart_by_whose_they_are(store: Store) -> None:
    """A response's turn and another detached turn (an Agents API session's) both wait on call `c1`: each
    answerer finds only its own."""
    paused = CompletionMessage(content="", tool_calls=[ToolCall(call_id="c1", tool_name="f")])
    for turn_id in ("session-turn", "response-turn"):
        await store.turns.begin_detached_turn(TENANT, turn_id, [], [], f"set-{turn_id}", TurnSettings(model="m"), T0)
        await store.turns.save_turn_progress(
            turn_id, status=TurnStatus.AWAITING_INPUT, output_message=paused, awaiting=["c1"]
        )
    await store.responses.add(
        ResponseRecord(
            response_id="resp-1",
            tenant_id=TENANT,
            turn_id="response-turn",
            segment_index=0,
            conversation_id=None,
            previous_response_id=None,
            model="m",
            request={"input": []},
            background=False,
            store=True,
            created_at=T0,
        )
    )
    assert await store.turns.pending_calls(TENANT, ["c1"], ["session-turn"]) == {"c1": "session-turn"}
    assert await store.responses.waiting_for(TENANT, ["c1"]) == {"c1": "response-turn"}
    assert await store.responses.waiting_for(TENANT, ["c1"], ["response-turn"]) == {"c1": "response-turn"}
    assert await store.responses.waiting_for(TENANT, ["c1"], ["session-turn"]) == {}
    assert await store.responses.waiting_for(TENANT, ["c1"], []) == {}
    assert await store.responses.waiting_for("tenant-b", ["c1"]) == {}


async def test_a_new_turns_settings_are_handed_to_this_process_once_and_stay_in_the_store(store: Store) -> None:
    """The first read in the writing process needs no round trip; every other read finds the stored row."""
    settings = TurnSettings(model="m", instructions="one", function_tools=[FunctionTool(name="f")])
    await store.turns.begin_detached_turn(TENANT, "d1", [UserMessage(content="now")], [], "set1", settings, T0)
    elsewhere = Store(store.database, store.vector_stores.index)  # another process's Store on the same database
    assert await elsewhere.turns.turn_settings("set1") == settings

    await store.database.write(lambda tx: tx.execute(delete(TurnSettingsRow)))  # reads of the row now find none
    assert await store.turns.turn_settings("set1") == settings  # handed over: no read
    assert await store.turns.turn_settings("set1") is None  # once: this read went to the store


async def test_a_new_turns_context_is_handed_to_this_processs_first_read_unless_it_changed(store: Store) -> None:
    context: list[ContextMessage] = [UserMessage(content="before"), CompletionMessage(content="answer")]
    settings = TurnSettings(model="m")
    for turn_id in ("read", "changed"):
        await store.turns.begin_detached_turn(
            TENANT, turn_id, [UserMessage(content="now")], context, turn_id, settings, T0
        )
    stored = await Store(store.database, store.vector_stores.index).turns.detached_context(
        "read"
    )  # another process's Store reads the rows
    assert stored is not None and stored[1] == context

    step = InferenceStep(
        turn_id="changed", step_id="s1", started_at=T0, completed_at=T0, model_response=CompletionMessage(content="a")
    )
    await store.turns.save_turn_progress("changed", new_steps=[(0, step)])
    changed = await store.turns.detached_context("changed")
    assert changed is not None and [s.step_id for s in changed[0].steps] == ["s1"]

    await store.database.write(lambda tx: delete_turns(tx, TurnRow.turn_id == "read"))
    handed = await store.turns.detached_context("read", first_model_call=True)  # no read: what was written
    assert handed is not None and handed[1] == context and handed[0].input_messages == stored[0].input_messages
    assert handed[0].steps == [] and handed[0].status == TurnStatus.RUNNING
    assert await store.turns.detached_context("read", first_model_call=True) is None  # once


async def test_a_kept_context_serves_only_the_turns_first_model_call(store: Store) -> None:
    """A separate worker writes the turn's steps, which cannot drop this process's copy: any other reader
    (the turn's later model calls, the next session turn's context) reads the store and drops it."""
    await store.turns.begin_detached_turn(
        TENANT, "t", [UserMessage(content="now")], [], "t", TurnSettings(model="m"), T0
    )
    step = InferenceStep(
        turn_id="t", step_id="s1", started_at=T0, completed_at=T0, model_response=CompletionMessage(content="a")
    )
    await Store(store.database, store.vector_stores.index).turns.save_turn_progress(
        "t", new_steps=[(0, step)]
    )  # another process's write

    later = await store.turns.detached_context("t")
    assert later is not None and [s.step_id for s in later[0].steps] == ["s1"]
    first = await store.turns.detached_context("t", first_model_call=True)  # what was kept is gone
    assert first is not None and [s.step_id for s in first[0].steps] == ["s1"]


async def test_a_new_turns_extra_statements_commit_with_it_or_not_at_all(store: Store) -> None:
    settings = TurnSettings(model="m")

    def fails(tx: Connection) -> None:
        raise RuntimeError("the response's insert failed")

    with pytest.raises(RuntimeError):
        await store.turns.begin_detached_turn(
            TENANT, "d1", [UserMessage(content="q")], [], "set1", settings, T0, also=fails
        )
    assert await store.turns.turn_status("d1") is None
    assert await Store(store.database, store.vector_stores.index).turns.turn_settings("set1") is None


async def test_a_llama_stack_pause_is_not_a_pending_call_of_any_tenant(store: Store) -> None:
    await _session(store)
    await store.turns.begin_turn("a1", "s1", "t1", [UserMessage(content="q")], T0)
    paused = CompletionMessage(content="", tool_calls=[ToolCall(call_id="c1", tool_name="f")])
    await store.turns.save_turn_progress("t1", status=TurnStatus.AWAITING_INPUT, output_message=paused, awaiting=["c1"])

    assert await store.turns.pending_calls(TENANT, ["c1"]) == {}
    assert await store.turns.turn_tenant("t1") == TENANT


async def test_a_detached_turn_is_deleted_with_everything_it_has_by_its_tenant_only(store: Store) -> None:
    settings = TurnSettings(model="m")
    await store.turns.begin_detached_turn(TENANT, "d1", [UserMessage(content="q")], [], "set1", settings, T0)
    await store.turns.save_turn_progress(
        "d1",
        events=[KeyedEvent(key="e", body={"runtime": {"kind": "segment_started"}})],
        new_steps=[(0, _step("d1", "s1", "a"))],
        status=TurnStatus.AWAITING_INPUT,
        awaiting=["c1"],
    )
    assert await store.turns.keep_turn_credentials("d1", "sealed")

    assert await store.turns.delete_detached_turn("tenant-b", "d1") is None
    assert await store.turns.delete_detached_turn(TENANT, "d1") == TurnStatus.AWAITING_INPUT
    assert await store.turns.get_turn(None, "d1") is None
    assert await store.turns.turn_settings("set1") is None
    assert await store.turns.pending_calls(TENANT, ["c1"]) == {}
    assert await store.turns.turn_credentials("d1") is None
    assert await _events(store, "d1", 0) == []
    assert await store.turns.delete_detached_turn(TENANT, "d1") is None
