"""Retention with short TTLs and a short schedule period against the real stack: expired responses,
conversations, sessions and turns disappear within a period while a paused turn survives; what has its own
`expires_after` goes even with no TTL; the schedule exists whatever process starts; an operator erases a
tenant in one call; the metrics count what was pruned."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai import OpenAI
from openai.types.responses.response_input_item_param import FunctionCallOutput
from temporalio.client import ScheduleActionExecutionStartWorkflow, WorkflowExecutionStatus
from temporalio.service import RPCError

from api.guards.auth import OPERATOR_PREFIX
from configuration.settings import Settings
from configuration.values import RETENTION_KINDS
from store.database import sqlite_module
from store.knowledge.retention import KNOWLEDGE_KINDS
from store.retention import KINDS
from tests.knowledge.test_knowledge_vector_stores import chunk_rows
from tests.support.processes import EVENT_SECONDS, wait_until
from tests.support.rest import create_agent, create_session, final_turn
from tests.support.scripted_model import ScriptedModel, text, tool_call
from tests.support.stack import SCRIPTED_MODEL, Stack
from workflows.retention import SCHEDULE_ID
from workflows.retention_schedule import ensure_retention_schedule

WEATHER: Any = {
    "type": "function",
    "name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
OPERATOR_KEY = "operator-key-0123456789"
OPERATOR_ROUTES = {("delete", "/v1/operator/tenants/{tenant}")}
"""An operator's, not a tenant's (tests/security/test_tenancy.py counts them as walked): proven here to refuse
API keys."""


@pytest.fixture
def client(stack: Stack) -> Iterator[OpenAI]:
    with OpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0, timeout=60) as made:
        yield made


def _delete_schedule(stack: Stack) -> None:
    with contextlib.suppress(RPCError):  # none yet
        stack.background.run(stack.client.get_schedule_handle(SCHEDULE_ID).delete())


@pytest.fixture
def retention(stack: Stack) -> Iterator[Any]:
    """Restarts the stack's worker with the given TTLs (seconds) and period, which it puts the schedule in place
    with as worker.py does; afterwards the stack's own worker again, and no schedule, so the rest of the suite
    on this stack keeps its rows."""

    def start(ttls: dict[str, float], period: float) -> Settings:
        settings = stack.settings.model_copy(
            update={"retention": {k: timedelta(seconds=v) for k, v in ttls.items()}, "retention_period": period}
        )
        stack.stop_worker()
        stack.start_worker(settings)
        stack.background.run(ensure_retention_schedule(stack.client, settings))
        return settings

    yield start
    _delete_schedule(stack)
    stack.stop_worker()
    stack.start_worker()


def test_every_kind_with_a_ttl_is_registered() -> None:
    with_ttl = {name for name, kind in KINDS.items() if kind.prune is not None}
    assert with_ttl | set(KNOWLEDGE_KINDS) == set(RETENTION_KINDS)
    assert "webhook_deliveries" in with_ttl


YOUNG_TTL = 10.0
"""The TTL of every kind when the sweep must keep what was made just before it."""


def test_expired_rows_go_within_a_period_and_a_paused_turn_stays(
    stack: Stack, client: OpenAI, model: ScriptedModel, retention: Any
) -> None:
    model.script(tool_call("get_weather", {"city": "Paris"}), text("stored answer"), text("chained"), text("later"))
    paused = client.responses.create(model=SCRIPTED_MODEL, input="weather?", tools=[WEATHER])
    assert paused.output[0].type == "function_call"
    stored = client.responses.create(model=SCRIPTED_MODEL, input="keep me a while")
    chained = client.responses.create(model=SCRIPTED_MODEL, input="and me", previous_response_id=stored.id)
    conversation = client.conversations.create(items=[{"role": "user", "content": "old conversation"}])
    compacted = client.responses.compact(model=SCRIPTED_MODEL, input="compact me")
    assert compacted.output[-1].type == "compaction"
    with httpx.Client(base_url=stack.base_url, timeout=60) as http:
        agent_id = create_agent(http, client_tools=[])
        session_id = create_session(http, agent_id)
        turn = final_turn(
            http.post(
                f"/v1/agents/{agent_id}/session/{session_id}/turn",
                json={"messages": [{"role": "user", "content": "hi"}], "stream": True},
            )
        )
        assert turn["status"] == "completed"

        # Everything above is now older than its TTL; `recent` stays younger until the sweeps that take the rest
        # (one a second) have been seen to, which on a loaded machine can take seconds.
        time.sleep(YOUNG_TTL + 0.5)
        recent = client.responses.create(model=SCRIPTED_MODEL, input="too young to go")
        retention({kind: YOUNG_TTL for kind in RETENTION_KINDS}, period=1)

        swept = [
            f"/v1/responses/{stored.id}",
            f"/v1/responses/{chained.id}",
            f"/v1/conversations/{conversation.id}",
            f"/v1/agents/{agent_id}/session/{session_id}",
            f"/v1/agents/{agent_id}/session/{session_id}/turn/{turn['turn_id']}",
        ]
        wait_until(lambda: all(http.get(gone).status_code == 404 for gone in swept), "the sweep", EVENT_SECONDS)
        assert http.get(f"/v1/responses/{recent.id}").status_code == 200  # its TTL has not passed
        metrics = http.get("/metrics").text
    assert 'durable_agents_retention_pruned_rows_total{kind="responses",reason="ttl"}' in metrics
    assert 'durable_agents_retention_oldest_age_seconds{kind="responses"}' in metrics

    # The paused turn is never pruned before its own expiry: it still answers its tool output.
    kept = client.responses.retrieve(paused.id)
    assert kept.status == "completed" and kept.output[0].type == "function_call"
    output: FunctionCallOutput = {"type": "function_call_output", "call_id": kept.output[0].call_id, "output": "sunny"}
    model.script(text("Sunny."))
    resumed = client.responses.create(
        model=SCRIPTED_MODEL, previous_response_id=paused.id, input=[output], tools=[WEATHER]
    )
    assert resumed.status == "completed" and resumed.output_text.strip() == "Sunny."


async def test_the_schedule_exists_whatever_process_starts_and_never_flaps(stack: Stack) -> None:
    """Workers of one configuration starting together or one after another leave one schedule, written once;
    one started without DA_RETENTION keeps it (it only takes its own period); a period change is applied."""
    handle = stack.client.get_schedule_handle(SCHEDULE_ID)
    configured = stack.settings.model_copy(
        update={"retention": {"responses": timedelta(seconds=60)}, "retention_period": 30.0}
    )
    try:
        await asyncio.gather(*(ensure_retention_schedule(stack.client, configured) for _ in range(4)))
        first = await handle.describe()
        assert first.schedule.spec.intervals[0].every == timedelta(seconds=30)
        for _ in range(3):
            await ensure_retention_schedule(stack.client, configured)
        assert (await handle.describe()).info.last_updated_at == first.info.last_updated_at  # never rewritten

        no_ttls = configured.model_copy(update={"retention": {}})
        await ensure_retention_schedule(stack.client, no_ttls)
        assert (await handle.describe()).info.last_updated_at == first.info.last_updated_at  # not deleted either

        await ensure_retention_schedule(stack.client, configured.model_copy(update={"retention_period": 45.0}))
        assert (await handle.describe()).schedule.spec.intervals[0].every == timedelta(seconds=45)
    finally:
        await handle.delete()


async def _sweeps(stack: Stack, status: WorkflowExecutionStatus) -> list[str]:
    """The ids of the sweeps the retention schedule has started that are in `status` now."""
    described = await stack.client.get_schedule_handle(SCHEDULE_ID).describe()
    found = []
    for result in described.info.recent_actions:
        action = result.action
        if isinstance(action, ScheduleActionExecutionStartWorkflow):
            run = stack.client.get_workflow_handle(action.workflow_id, run_id=action.first_execution_run_id)
            if (await run.describe()).status == status:
                found.append(action.workflow_id)
    return found


def test_a_sweep_left_on_a_task_queue_the_schedule_no_longer_names_is_ended_at_the_next_start(stack: Stack) -> None:
    """The workers moved to another task queue: a sweep started on the old one, which no worker polls now, would
    never end, and the schedule would skip every later sweep behind it. The next worker start ends it."""
    run = stack.background.run
    every_second = stack.settings.model_copy(update={"retention_period": 1.0})
    elsewhere = every_second.model_copy(update={"task_queue": "no-worker-polls-this"})
    try:
        run(ensure_retention_schedule(stack.client, elsewhere))
        running = WorkflowExecutionStatus.RUNNING
        [stuck] = wait_until(lambda: run(_sweeps(stack, running)), "a sweep on the old queue", EVENT_SECONDS)
        run(ensure_retention_schedule(stack.client, every_second))
        assert stuck in run(_sweeps(stack, WorkflowExecutionStatus.TERMINATED))
        completed = WorkflowExecutionStatus.COMPLETED
        wait_until(lambda: run(_sweeps(stack, completed)), "a sweep on the stack's queue", EVENT_SECONDS)
    finally:
        run(stack.client.get_schedule_handle(SCHEDULE_ID).delete())


def test_an_operator_erases_one_tenant_in_one_call(stack: Stack, model: ScriptedModel) -> None:
    keys = ("alice:key-alice-0123", "bob:key-bob-4567")
    settings = stack.settings.model_copy(update={"api_keys": keys, "operator_key": OPERATOR_KEY})
    model.script(tool_call("get_weather", {"city": "Oslo"}))
    with stack.other_api(settings) as url:
        alice = httpx.Client(base_url=url, headers={"Authorization": "Bearer key-alice-0123"}, timeout=60)
        bob = httpx.Client(base_url=url, headers={"Authorization": "Bearer key-bob-4567"}, timeout=60)
        operator = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {OPERATOR_KEY}"}, timeout=60)
        paused = alice.post("/v1/responses", json={"model": SCRIPTED_MODEL, "input": "w?", "tools": [WEATHER]}).json()
        answered = alice.post("/v1/responses", json={"model": SCRIPTED_MODEL, "input": "hello"}).json()
        conversation = alice.post("/v1/conversations", json={"items": [{"role": "user", "content": "x"}]}).json()
        agent_id = create_agent(alice, client_tools=[])
        session_id = create_session(alice, agent_id)
        bobs = bob.post("/v1/responses", json={"model": SCRIPTED_MODEL, "input": "bob's"}).json()

        assert alice.delete(f"{OPERATOR_PREFIX}tenants/alice").status_code == 401  # an API key is no operator
        erased = operator.delete(f"{OPERATOR_PREFIX}tenants/alice")
        assert erased.status_code == 200, erased.text
        body = erased.json()
        assert body["status"] == "completed" and body["stopped_turns"] == 1
        assert body["deleted"]["responses"] >= 1 and body["deleted"]["conversations"] == 1

        for path in (f"/v1/responses/{paused['id']}", f"/v1/responses/{answered['id']}"):
            assert alice.get(path).status_code == 404
        assert alice.get(f"/v1/conversations/{conversation['id']}").status_code == 404
        assert alice.get(f"/v1/agents/{agent_id}").status_code == 404
        assert alice.get(f"/v1/agents/{agent_id}/session/{session_id}").status_code == 404
        assert bob.get(f"/v1/responses/{bobs['id']}").status_code == 200  # another tenant's stays
        again = operator.delete(f"{OPERATOR_PREFIX}tenants/alice").json()
        assert again["status"] == "completed" and again["deleted"] == {}
    with stack.other_api(stack.settings) as url:
        off = httpx.delete(f"{url}{OPERATOR_PREFIX}tenants/alice", headers={"Authorization": "Bearer x"}, timeout=60)
        assert off.status_code == 404 and "DA_OPERATOR_KEY" in off.json()["detail"]


FILES_TTL = 10.0
"""Long enough that the fresh file outlives the wait for the old one's deletion, on a loaded machine too."""


def _store_sql(stack: Stack, statement: str, *args: object) -> None:
    db = sqlite_module().connect(Path(stack.settings.store_url.removeprefix("sqlite+aiosqlite:///")))
    try:
        db.execute(statement, args)
        db.commit()
    finally:
        db.close()


def test_old_files_and_expired_vector_stores_go_as_their_deletes_do(
    stack: Stack, client: OpenAI, retention: Any
) -> None:
    """Files past the files TTL leave every vector store and the blob directory; vector stores past their own
    `expires_after`, or idle past the vector_stores TTL, go with their chunks; fresh ones stay."""
    notes = b"The harbour seal rests on rocky shores and dives for herring and cod."
    old_file = client.files.create(file=("old.md", notes), purpose="assistants")
    busy_file = client.files.create(file=("busy.md", notes), purpose="assistants")
    born = time.monotonic()
    kept = client.vector_stores.create(name="kept")
    expiring = client.vector_stores.create(name="expiring", expires_after={"anchor": "last_active_at", "days": 1})
    idle = client.vector_stores.create(name="idle")
    for store in (kept, expiring, idle):
        attached = client.vector_stores.files.create_and_poll(file_id=old_file.id, vector_store_id=store.id)
        assert attached.status == "completed"
    # A store still ingesting a file keeps it, however old (its ingestion workflow, ended, is never rerun).
    client.vector_stores.files.create_and_poll(file_id=busy_file.id, vector_store_id=kept.id)
    _store_sql(stack, "UPDATE vector_store_files SET status = 'in_progress' WHERE file_id = ?", busy_file.id)
    # One inactive past its `expires_after` (a day) though not the vector_stores TTL (two days); one past that.
    for store, idle_for in ((expiring, timedelta(hours=30)), (idle, timedelta(days=3))):
        since = (datetime.now(UTC) - idle_for).strftime("%Y-%m-%d %H:%M:%S.%f")  # as SQLAlchemy writes it
        _store_sql(stack, "UPDATE vector_stores SET last_active_at = ? WHERE vector_store_id = ?", since, store.id)
    assert client.vector_stores.retrieve(expiring.id).status == "expired"
    blob_dir = stack.settings.data_dir / "files"
    assert (blob_dir / old_file.id).exists() and chunk_rows(stack, expiring.id) > 0

    time.sleep(max(0.0, born + FILES_TTL + 1 - time.monotonic()))  # the old file is now older than its TTL
    fresh_file = client.files.create(file=("fresh.md", notes), purpose="assistants")
    retention({"files": FILES_TTL, "vector_stores": 2 * 86400}, period=1)
    with httpx.Client(base_url=stack.base_url, timeout=60) as http:
        deadline = time.monotonic() + EVENT_SECONDS
        while time.monotonic() < deadline:
            if http.get(f"/v1/files/{old_file.id}").status_code == 404 and all(
                http.get(f"/v1/vector_stores/{store.id}").status_code == 404 for store in (expiring, idle)
            ):
                break
            time.sleep(0.5)
        assert http.get(f"/v1/files/{old_file.id}").status_code == 404
        assert not (blob_dir / old_file.id).exists()
        for gone in (expiring, idle):
            assert http.get(f"/v1/vector_stores/{gone.id}").status_code == 404
            assert chunk_rows(stack, gone.id) == 0
        assert http.get(f"/v1/files/{fresh_file.id}").status_code == 200 and (blob_dir / fresh_file.id).exists()
        assert http.get(f"/v1/vector_stores/{kept.id}").status_code == 200
        metrics = http.get("/metrics").text
    # The old file left the kept store; the busy one stays in it.
    assert [file.id for file in client.vector_stores.files.list(vector_store_id=kept.id).data] == [busy_file.id]
    assert client.files.retrieve(busy_file.id).id == busy_file.id and (blob_dir / busy_file.id).exists()
    assert 'durable_agents_retention_pruned_rows_total{kind="files",reason="ttl"}' in metrics
    assert 'durable_agents_retention_pruned_rows_total{kind="vector_stores",reason="expires_after"}' in metrics


def test_expires_after_is_honoured_with_no_ttl_at_all(stack: Stack, client: OpenAI, retention: Any) -> None:
    """A worker without DA_RETENTION still sweeps files and vector stores past their own `expires_after`."""
    notes = b"Puffins nest in burrows on grassy cliff tops."
    expiring_file = client.files.create(
        file=("expiring.md", notes), purpose="assistants", expires_after={"anchor": "created_at", "seconds": 3600}
    )
    kept_file = client.files.create(file=("kept.md", notes), purpose="assistants")
    expiring = client.vector_stores.create(name="expiring", expires_after={"anchor": "last_active_at", "days": 1})
    kept = client.vector_stores.create(name="kept", expires_after={"anchor": "last_active_at", "days": 1})
    attached = client.vector_stores.files.create_and_poll(file_id=kept_file.id, vector_store_id=expiring.id)
    assert attached.status == "completed"
    past = (datetime.now(UTC) - timedelta(hours=30)).strftime("%Y-%m-%d %H:%M:%S.%f")  # as SQLAlchemy writes it
    _store_sql(stack, "UPDATE files SET expires_at = ? WHERE file_id = ?", past, expiring_file.id)
    _store_sql(stack, "UPDATE vector_stores SET last_active_at = ? WHERE vector_store_id = ?", past, expiring.id)
    blob_dir = stack.settings.data_dir / "files"
    assert (blob_dir / expiring_file.id).exists()

    retention({}, period=1)
    with httpx.Client(base_url=stack.base_url, timeout=60) as http:
        deadline = time.monotonic() + EVENT_SECONDS
        while (blob_dir / expiring_file.id).exists() or chunk_rows(stack, expiring.id) > 0:
            assert time.monotonic() < deadline, "what expired was not swept"
            time.sleep(0.5)
        assert http.get(f"/v1/vector_stores/{expiring.id}").status_code == 404
        assert expiring_file.id not in [file.id for file in client.files.list().data]
        assert http.get(f"/v1/files/{kept_file.id}").status_code == 200 and (blob_dir / kept_file.id).exists()
        assert http.get(f"/v1/vector_stores/{kept.id}").status_code == 200
        metrics = http.get("/metrics").text
    assert 'durable_agents_retention_pruned_rows_total{kind="files",reason="expires_after"}' in metrics


def test_agents_api_sessions_expire_like_llama_stack_ones_and_a_paused_turn_stays(
    client: OpenAI, model: ScriptedModel, retention: Any
) -> None:
    """The `sessions` TTL takes an idle Agents API session with its turns; the `turns` TTL an ended turn that is
    not its session's latest; a session whose turn waits for the caller is kept, and its turn still resumes."""
    none: Any = {"type": "none"}
    agent: Any = {"model": SCRIPTED_MODEL, "tools": [WEATHER | {"description": "The weather."}]}
    model.script(text("old answer"), text("first answer"), tool_call("get_weather", {"city": "Oslo"}))
    idle = client.beta.agents.sessions.create(environment=none, agent=agent, input="hello")
    kept = client.beta.agents.sessions.create(environment=none, agent=agent, input="first")
    for session_id in (idle.id, kept.id):
        _wait_session(client, session_id, "idle")
    client.beta.agents.sessions.events.create(
        kept.id,
        # Content as a plain string, which the API takes and the SDK's type (content parts only) does not name.
        events=[{"type": "agent.session.input.message", "input": [{"role": "user", "content": "weather?"}]}],  # type: ignore[typeddict-item]
    )
    paused = _wait_session(client, kept.id, "requires_action")
    [first_turn, waiting_turn] = client.beta.agents.sessions.turns.list(kept.id, order="asc").data

    time.sleep(2)  # all of it is now older than its TTL
    retention({"sessions": 1.5, "turns": 1.5}, period=1)
    deadline = time.monotonic() + EVENT_SECONDS
    while time.monotonic() < deadline:
        turns = [turn.id for turn in client.beta.agents.sessions.turns.list(kept.id).data]
        if turns == [waiting_turn.id] and _session_gone(client, idle.id):
            break
        time.sleep(0.5)
    assert _session_gone(client, idle.id), "the idle session outlived its TTL"
    assert [turn.id for turn in client.beta.agents.sessions.turns.list(kept.id).data] == [waiting_turn.id]
    assert first_turn.id != waiting_turn.id

    # The waiting session was not pruned, and its turn still takes its result.
    assert client.beta.agents.sessions.retrieve(kept.id).status == "requires_action"
    [action] = paused.required_actions
    model.script(text("Sunny in Oslo."))
    client.beta.agents.sessions.events.create(
        kept.id,
        events=[
            {
                "type": "agent.session.input.tool_result",
                "turn_id": action.turn_id,
                "call_id": action.call_id,
                "success": True,
                "output": "sunny",
            }
        ],
    )
    assert _wait_session(client, kept.id, "idle").status == "idle"
    assert model.requests[-1]["messages"][-1]["content"] == "sunny"


def _wait_session(client: OpenAI, session_id: str, wanted: str, seconds: float = EVENT_SECONDS) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        session = client.beta.agents.sessions.retrieve(session_id)
        if session.status == wanted or time.monotonic() > deadline:
            return session
        time.sleep(0.05)


def _session_gone(client: OpenAI, session_id: str) -> bool:
    try:
        client.beta.agents.sessions.retrieve(session_id)
    except openai.NotFoundError:
        return True
    return False
