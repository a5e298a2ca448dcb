"""Counting a turn's model calls into its tenant's daily usage (store/tenancy/tables.py ModelUsageRow), inside the
transaction that writes their usage events (events.py): one upsert per call, no read and no round trip of its own.

The tenant is the turn's own (a detached turn: Responses, Agents API sessions) or its agent's (a llama-stack
turn), found by the upsert's own select; a turn that has neither is not counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from functools import cache
from typing import Any

from sqlalchemy import BigInteger, Connection, Date, String, bindparam, func, literal, select
from sqlalchemy.dialects import postgresql, sqlite

from domain.model_calls import ModelCall
from store.tenancy.tables import ModelUsageRow
from store.turns.tables import AgentRow, TurnRow

_SUMMED = ("calls", "input_tokens", "output_tokens", "cost_microcents")


@cache
def _count(dialect: str) -> Any:
    """The upsert for `dialect` (both spell ON CONFLICT alike, but each has its own construct), built once."""
    tenant = func.coalesce(TurnRow.tenant_id, AgentRow.tenant_id)
    row = (
        select(
            tenant,
            bindparam("day", type_=Date),
            bindparam("model", type_=String),
            literal(1, BigInteger),
            bindparam("input_tokens", type_=BigInteger),
            bindparam("output_tokens", type_=BigInteger),
            bindparam("cost_microcents", type_=BigInteger),
        )
        .select_from(TurnRow)
        .outerjoin(AgentRow, AgentRow.agent_id == TurnRow.agent_id)
        .where(TurnRow.turn_id == bindparam("turn_id"), tenant.is_not(None))
    )
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = insert(ModelUsageRow).from_select(["tenant_id", "day", "model", *_SUMMED], row)
    table = ModelUsageRow.__table__.c
    return statement.on_conflict_do_update(
        index_elements=[table.tenant_id, table.day, table.model],
        set_={column: table[column] + statement.excluded[column] for column in _SUMMED},
    )


def count_model_calls(tx: Connection, turn_id: str, calls: Sequence[ModelCall], day: date) -> None:
    """Add `calls`, made for `turn_id`, to its tenant's usage of `day` (UTC)."""
    statement = _count(tx.dialect.name)
    for call in calls:
        tx.execute(
            statement,
            {
                "turn_id": turn_id,
                "day": day,
                "model": call.model,
                "input_tokens": call.input_tokens,
                "output_tokens": call.output_tokens,
                "cost_microcents": call.cost_microcents,
            },
        )
