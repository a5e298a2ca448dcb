"""What a process keeps of the rows it just wrote (store/hand_over.py) is bounded in bytes as well as in count: a
burst of turns with large input, none of them read here (a separate worker runs them), cannot pile up."""

from __future__ import annotations

from sqlalchemy import delete

from domain.content import UserMessage
from domain.turn_settings import TurnSettings
from store.hand_over import HANDED_OVER_BYTES, HandOver
from store.repository import Store
from store.turns.rows import delete_turns
from store.turns.tables import TurnRow, TurnSettingsRow
from tests.store.test_store import T0, TENANT, store

__all__ = ["store"]  # the fixture, on SQLite and PostgreSQL

MEGABYTE = "x" * (1 << 20)


def test_the_oldest_go_first_once_the_bytes_are_used_up_and_an_oversized_value_is_never_kept() -> None:
    kept: HandOver[str, str] = HandOver(len, most=100, most_bytes=10)
    for key in ("a", "b", "c"):
        kept.keep(key, key * 4)
    assert kept.take("a") is None and kept.take("b") == "bbbb" and kept.take("c") == "cccc"
    kept.keep("huge", "h" * 11)
    assert kept.take("huge") is None and kept.kept_bytes == 0


async def test_a_burst_of_large_turns_keeps_at_most_the_byte_budget_and_the_newest(store: Store) -> None:
    turns = [f"big{n}" for n in range(HANDED_OVER_BYTES // len(MEGABYTE) + 8)]
    settings = TurnSettings(model="m")
    for turn_id in turns:
        await store.turns.begin_detached_turn(
            TENANT, turn_id, [UserMessage(content=MEGABYTE)], [], turn_id, settings, T0
        )
    await store.database.write(lambda tx: delete_turns(tx, TurnRow.turn_id.in_(turns)))
    await store.database.write(lambda tx: tx.execute(delete(TurnSettingsRow)))
    # What is still handed over answers without the (now deleted) rows; what was let go reads the store: None.
    handed = [turn_id for turn_id in turns if await store.turns.detached_context(turn_id, first_model_call=True)]
    assert turns[-1] in handed and turns[0] not in handed
    assert len(handed) * len(MEGABYTE) <= HANDED_OVER_BYTES
