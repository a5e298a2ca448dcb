"""A session's `agent.session.in_progress` webhook event commits with its cause, or neither does: a raised spend
limit that lets a held turn go on records it in the limit's own transaction, and a turn working again after its
pause in the write that says so."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import pytest

from agent_sessions.announce import session_event
from domain.content import UserMessage
from domain.events import KeyedEvent
from domain.turn_settings import TurnSettings
from domain.turns import TurnStatus
from store.agent_sessions.sessions import BetaSessionRecord
from store.repository import Store
from tests.support.databases import opened_store
from workflows.contracts import pause_event_key

SETTINGS = TurnSettings(model="m")


@pytest.fixture(params=["sqlite", "postgresql"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    async with opened_store(request.param, tmp_path) as store:
        yield store


async def test_lifting_the_limit_of_a_held_turn_records_its_in_progress_event_with_the_change(store: Store) -> None:
    await store.webhooks.create_endpoint(
        "t", "hook", "https://hooks.example/in", ["agent.session.in_progress"], "sealed", "hint", 10
    )
    resumed = ("t", partial(session_event, "agent.session.in_progress", "sess_a", occasion="budget1"))
    await store.spend.set_limit("sess_a", 0)
    assert (await store.spend.check("sess_a", "turn_a")).waiting_turn_id == "turn_a"

    spend, recorded = await store.spend.set_limit("sess_a", 0, resumed)  # still reached: the turn stays held
    assert not recorded and await store.webhooks.unstarted(10, "turn_a") == []

    spend, recorded = await store.spend.set_limit("sess_a", 100, resumed)
    assert recorded and spend.waiting_turn_id == "turn_a" and not spend.reached
    deliveries = await store.webhooks.unstarted(10, "turn_a")
    assert len(deliveries) == 1

    _, again = await store.spend.set_limit("sess_a", 200, resumed)  # the same cause: recorded once
    assert not again and len(await store.webhooks.unstarted(10, "turn_a")) == 1


async def test_a_session_turn_working_again_after_a_pause_records_in_progress_in_that_write(store: Store) -> None:
    await store.webhooks.create_endpoint(
        "t", "hook", "https://hooks.example/in", ["agent.session.in_progress"], "sealed", "hint", 10
    )
    now = datetime.now(UTC)
    await store.agent_sessions.add_session(BetaSessionRecord("sess_a", "t", None, {}, None, 0, now, now))
    await store.turns.begin_detached_turn("t", "turn_a", [UserMessage(content="hi")], [], "turn_a", SETTINGS, now)
    assert await store.agent_sessions.claim_turn("t", "sess_a", "turn_a", None, now) is not None
    paused = KeyedEvent(key=pause_event_key(1), body={"pause": 1})
    await store.turns.save_turn_progress("turn_a", [paused], status=TurnStatus.AWAITING_INPUT)
    assert await store.webhooks.unstarted(10, "turn_a") == []

    resumed = KeyedEvent(key="step:x1", body={"step": "x1"})
    await store.turns.save_turn_progress("turn_a", [resumed], status=TurnStatus.RUNNING)
    await store.turns.save_turn_progress("turn_a", [resumed], status=TurnStatus.RUNNING)  # a retried write
    assert len(await store.webhooks.unstarted(10, "turn_a")) == 1

    # The API's own record of the same resume names the same pause: it records nothing more.
    late = session_event("agent.session.in_progress", "sess_a", "turn_a", "pause1")
    assert not await store.webhooks.record("t", late.event_type, late.data, late.cause, "turn_a")
    assert len(await store.webhooks.unstarted(10, "turn_a")) == 1
