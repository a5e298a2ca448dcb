"""Counting model calls into their tenant's daily usage (store/tenancy/tables.py ModelUsageRow), inside the
transaction that writes their result: one upsert per call, no read and no round trip of its own.

A turn's calls are counted as their usage events are written (events.py): the tenant is the turn's own (a
detached turn: Responses, Agents API sessions) or its agent's (a llama-stack turn), found by the upsert's own
select; a turn that has neither is not counted. A standalone compaction's summary (`POST /v1/responses/compact`)
is counted as it is written, under the compaction's tenant (store/responses/compactions.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from functools import cache
from typing import Any

from sqlalchemy import BigInteger, Connection, Date, Select, String, bindparam, func, literal, select
from sqlalchemy.dialects import postgresql, sqlite

from domain.model_calls import ModelCall
from store.tenancy.tables import ModelUsageRow
from store.turns.tables import AgentRow, TurnRow

_SUMMED = ("calls", "input_tokens", "output_tokens", "cost_microcents")


def _row(tenant: Any) -> Select[Any]:
    return select(
        tenant,
        bindparam("day", type_=Date),
        bindparam("model", type_=String),
        literal(1, BigInteger),
        bindparam("input_tokens", type_=BigInteger),
        bindparam("output_tokens", type_=BigInteger),
        bindparam("cost_microcents", type_=BigInteger),
    )


@cache
def _count(dialect: str, of_turn: bool) -> Any:
    """The upsert for `dialect` (both spell ON CONFLICT alike, but each has its own construct), built once;
    `of_turn`: the tenant is the turn's (parameter `turn_id`), else parameter `tenant`."""
    if of_turn:
        tenant = func.coalesce(TurnRow.tenant_id, AgentRow.tenant_id)
        row = (
            _row(tenant)
            .select_from(TurnRow)
            .outerjoin(AgentRow, AgentRow.agent_id == TurnRow.agent_id)
            .where(TurnRow.turn_id == bindparam("turn_id"), tenant.is_not(None))
        )
    else:
        row = _row(bindparam("tenant", type_=String)).where(literal(True))  # SQLite: a WHERE before ON CONFLICT
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = insert(ModelUsageRow).from_select(["tenant_id", "day", "model", *_SUMMED], row)
    table = ModelUsageRow.__table__.c
    return statement.on_conflict_do_update(
        index_elements=[table.tenant_id, table.day, table.model],
        set_={column: table[column] + statement.excluded[column] for column in _SUMMED},
    )


def _parameters(call: ModelCall, day: date) -> dict[str, Any]:
    return {
        "day": day,
        "model": call.model,
        "input_tokens": call.input_tokens,
        "output_tokens": call.output_tokens,
        "cost_microcents": call.cost_microcents,
    }


def count_turn_calls(tx: Connection, turn_id: str, calls: Sequence[ModelCall], day: date) -> None:
    """Add `calls`, made for `turn_id`, to its tenant's usage of `day` (UTC)."""
    statement = _count(tx.dialect.name, of_turn=True)
    for call in calls:
        tx.execute(statement, {"turn_id": turn_id, **_parameters(call, day)})


def count_tenant_call(tx: Connection, tenant: str, call: ModelCall, day: date) -> None:
    """Add `call` to `tenant`'s usage of `day` (UTC)."""
    tx.execute(_count(tx.dialect.name, of_turn=False), {"tenant": tenant, **_parameters(call, day)})
