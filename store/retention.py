"""What retention deletes, kind by kind: one registered entry per kind of stored thing.

Each kind says how to delete a bounded batch of its rows that expired before a cutoff (`prune`), how old its
oldest kept row is (`oldest`, a metric), and how to delete a bounded batch of one tenant's rows (`erase`).
Each call is one transaction of at most `limit` rows (with what hangs off them: a turn's steps and events, a
conversation's items), so neither a sweep nor an erasure holds the store for long, and either, cut short by
a crash, simply goes on with the next batch. Files, vector stores and webhook endpoints are not entries here:
their deletes reach beyond the store (blobs, workflows), so activities/retention.py runs them.

Never pruned: a turn still running or paused (a paused turn is pruned only once it has ended — its own
expiry ends it), a session with such a turn (of either dialect: store/agent_sessions/retention.py), and a
response whose items its conversation has not yet taken in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, and_, delete, exists, func, or_, select, tuple_

from store.agent_sessions.automation_tables import AutomationInvocationRow, AutomationRow
from store.agent_sessions.retention import (
    delete_agent_sessions,
    oldest_agent_session,
    oldest_agent_session_turn,
    prune_agent_session_turns,
    prune_agent_sessions,
)
from store.agent_sessions.tables import BetaAgentRow, BetaSessionRow
from store.responses.tables import CompactionRow, ConversationItemRow, ConversationRow, ResponseRow
from store.tenancy.tables import ModelUsageRow
from store.turns.records import FINAL_STATUSES
from store.turns.rows import delete_turns
from store.turns.tables import AgentRow, SessionRow, ToolGroupRow, TurnRow
from store.webhooks.webhook_store import erase_tenant_events, oldest_event, prune_delivery_log

Prune = Callable[[Connection, datetime, int], int]
Oldest = Callable[[Connection], datetime | None]
Erase = Callable[[Connection, str, int], int]


@dataclass(frozen=True)
class Kind:
    name: str
    prune: Prune | None
    """None: the kind has no time-to-live of its own (it goes with its tenant only)."""
    oldest: Oldest | None
    erase: Erase


KINDS: dict[str, Kind] = {}


def register(kind: Kind) -> Kind:
    KINDS[kind.name] = kind
    return kind


def _ids(tx: Connection, query: object) -> list[str]:
    return list(tx.scalars(query))  # type: ignore[call-overload]


# --- responses (store: true) and their turns ------------------------------------------------------------


def _prune_responses(tx: Connection, cutoff: datetime, limit: int) -> int:
    rows = tx.execute(
        select(ResponseRow.response_id, ResponseRow.turn_id)
        .join(TurnRow, TurnRow.turn_id == ResponseRow.turn_id)
        .where(
            ResponseRow.store.is_(True),
            ResponseRow.created_at < cutoff,
            TurnRow.status.in_(FINAL_STATUSES),
            or_(ResponseRow.conversation_id.is_(None), ResponseRow.appended_to_conversation.is_(True)),
        )
        .order_by(ResponseRow.created_at)
        .limit(limit)
    ).all()
    if not rows:
        return 0
    tx.execute(delete(ResponseRow).where(ResponseRow.response_id.in_([row.response_id for row in rows])))
    turns = {row.turn_id for row in rows}
    left = set(tx.scalars(select(ResponseRow.turn_id).where(ResponseRow.turn_id.in_(turns))))
    if turns - left:  # a turn goes with its last response
        delete_turns(tx, TurnRow.turn_id.in_(turns - left))
    return len(rows)


def _erase_detached_turns(tx: Connection, tenant: str, limit: int) -> int:
    """The tenant's Responses turns, and with them (cascade) their responses, settings and pending calls."""
    turns = _ids(
        tx, select(TurnRow.turn_id).where(TurnRow.tenant_id == tenant, TurnRow.session_id.is_(None)).limit(limit)
    )
    if turns:
        delete_turns(tx, TurnRow.turn_id.in_(turns))
    return len(turns)


register(
    Kind(
        "responses",
        _prune_responses,
        lambda tx: tx.scalar(select(func.min(ResponseRow.created_at)).where(ResponseRow.store.is_(True))),
        _erase_detached_turns,
    )
)


# --- conversations --------------------------------------------------------------------------------------


def _delete_conversations(tx: Connection, ids: list[str]) -> int:
    if ids:
        tx.execute(delete(ConversationItemRow).where(ConversationItemRow.conversation_id.in_(ids)))
        tx.execute(delete(ConversationRow).where(ConversationRow.conversation_id.in_(ids)))
    return len(ids)


def _prune_conversations(tx: Connection, cutoff: datetime, limit: int) -> int:
    """Conversations with nothing added since the cutoff and no response still to be taken in."""
    recent_item = exists().where(
        ConversationItemRow.conversation_id == ConversationRow.conversation_id, ConversationItemRow.created_at >= cutoff
    )
    unsettled = exists().where(
        ResponseRow.conversation_id == ConversationRow.conversation_id,
        ResponseRow.appended_to_conversation.is_(False),
    )
    query = (
        select(ConversationRow.conversation_id)
        .where(ConversationRow.created_at < cutoff, ~recent_item, ~unsettled)
        .order_by(ConversationRow.created_at)
        .limit(limit)
    )
    return _delete_conversations(tx, _ids(tx, query))


register(
    Kind(
        "conversations",
        _prune_conversations,
        lambda tx: tx.scalar(select(func.min(ConversationRow.created_at))),
        lambda tx, tenant, limit: _delete_conversations(
            tx,
            _ids(tx, select(ConversationRow.conversation_id).where(ConversationRow.tenant_id == tenant).limit(limit)),
        ),
    )
)


# --- llama-stack turns and sessions ---------------------------------------------------------------------

_SESSION_TURN = TurnRow.session_id.is_not(None)


def _prune_turns(tx: Connection, cutoff: datetime, limit: int) -> int:
    """Ended turns of sessions, by when they ended; the session itself stays (it has its own TTL)."""
    ended = func.coalesce(TurnRow.completed_at, TurnRow.started_at)
    query = (
        select(TurnRow.turn_id)
        .where(_SESSION_TURN, TurnRow.status.in_(FINAL_STATUSES), ended < cutoff)
        .order_by(TurnRow.started_at)
        .limit(limit)
    )
    turns = _ids(tx, query)
    if turns:
        delete_turns(tx, TurnRow.turn_id.in_(turns))
    return len(turns)


def _prune_sessions(tx: Connection, cutoff: datetime, limit: int) -> int:
    """Sessions no turn has started in since the cutoff and none runs or waits in, with their turns."""
    recent_turn = exists().where(TurnRow.session_id == SessionRow.session_id, TurnRow.started_at >= cutoff)
    query = (
        select(SessionRow.session_id)
        .where(SessionRow.started_at < cutoff, SessionRow.active_turn_id.is_(None), ~recent_turn)
        .order_by(SessionRow.started_at)
        .limit(limit)
    )
    sessions = _ids(tx, query)
    if sessions:
        delete_turns(tx, TurnRow.session_id.in_(sessions))
        tx.execute(delete(SessionRow).where(SessionRow.session_id.in_(sessions)))
    return len(sessions)


def _erase_agents(tx: Connection, tenant: str, limit: int) -> int:
    """The tenant's agents with their sessions and turns: turns first, a batch at a time, then the rest."""
    agents = select(AgentRow.agent_id).where(AgentRow.tenant_id == tenant)
    turns = _ids(tx, select(TurnRow.turn_id).where(TurnRow.agent_id.in_(agents)).limit(limit))
    if turns:
        delete_turns(tx, TurnRow.turn_id.in_(turns))
        return len(turns)
    sessions = _ids(tx, select(SessionRow.session_id).where(SessionRow.agent_id.in_(agents)).limit(limit))
    if sessions:
        delete_turns(tx, TurnRow.session_id.in_(sessions))  # a turn that began meanwhile
        tx.execute(delete(SessionRow).where(SessionRow.session_id.in_(sessions)))
        return len(sessions)
    found = _ids(tx, agents.limit(limit))
    if found:
        tx.execute(delete(AgentRow).where(AgentRow.agent_id.in_(found)))
    return len(found)


def _both(llama_stack: Prune, agents_api: Prune) -> Prune:
    """One kind's prune over both dialects' sessions (store/agent_sessions/retention.py), within one batch."""

    def prune(tx: Connection, cutoff: datetime, limit: int) -> int:
        deleted = llama_stack(tx, cutoff, limit)
        return deleted + (agents_api(tx, cutoff, limit - deleted) if deleted < limit else 0)

    return prune


def _oldest(*found: datetime | None) -> datetime | None:
    return min((moment for moment in found if moment is not None), default=None)


register(
    Kind(
        "turns",
        _both(_prune_turns, prune_agent_session_turns),
        lambda tx: _oldest(
            tx.scalar(select(func.min(TurnRow.started_at)).where(_SESSION_TURN)), oldest_agent_session_turn(tx)
        ),
        lambda tx, tenant, limit: 0,  # the tenant's session turns go with its agents (and its detached turns)
    )
)
register(
    Kind(
        "sessions",
        _both(_prune_sessions, prune_agent_sessions),
        lambda tx: _oldest(tx.scalar(select(func.min(SessionRow.started_at))), oldest_agent_session(tx)),
        _erase_agents,
    )
)


# --- the rest of a tenant's rows ------------------------------------------------------------------------


def _erase_toolgroups(tx: Connection, tenant: str, limit: int) -> int:
    found = _ids(tx, select(ToolGroupRow.toolgroup_id).where(ToolGroupRow.tenant_id == tenant).limit(limit))
    if found:
        tx.execute(
            delete(ToolGroupRow).where(and_(ToolGroupRow.tenant_id == tenant, ToolGroupRow.toolgroup_id.in_(found)))
        )
    return len(found)


def _prune_compactions(tx: Connection, cutoff: datetime, limit: int) -> int:
    found = _ids(
        tx,
        select(CompactionRow.compaction_id)
        .where(CompactionRow.created_at < cutoff)
        .order_by(CompactionRow.created_at)
        .limit(limit),
    )
    if found:
        tx.execute(delete(CompactionRow).where(CompactionRow.compaction_id.in_(found)))
    return len(found)


def _erase_compactions(tx: Connection, tenant: str, limit: int) -> int:
    found = _ids(tx, select(CompactionRow.compaction_id).where(CompactionRow.tenant_id == tenant).limit(limit))
    if found:
        tx.execute(delete(CompactionRow).where(CompactionRow.compaction_id.in_(found)))
    return len(found)


def _erase_model_usage(tx: Connection, tenant: str, limit: int) -> int:
    """The tenant's daily model usage: a row per day and model, so small it has no time-to-live of its own."""
    usage = ModelUsageRow
    found = tx.execute(select(usage.day, usage.model).where(usage.tenant_id == tenant).limit(limit)).all()
    if found:
        days_and_models = [(day, model) for day, model in found]
        tx.execute(delete(usage).where(usage.tenant_id == tenant, tuple_(usage.day, usage.model).in_(days_and_models)))
    return len(found)


register(Kind("toolgroups", None, None, _erase_toolgroups))
register(
    Kind(
        "compactions",
        _prune_compactions,
        lambda tx: tx.scalar(select(func.min(CompactionRow.created_at))),
        _erase_compactions,
    )
)

register(Kind("webhook_deliveries", prune_delivery_log, oldest_event, erase_tenant_events))
"""Webhook events (the outbox) with their deliveries and attempts: the delivery log."""
register(Kind("model_usage", None, None, _erase_model_usage))


def unfinished_turns_of(tx: Connection, tenant: str, limit: int) -> list[str]:
    """Turns of the tenant still running or paused, whose workflows an erasure stops first."""
    agents = select(AgentRow.agent_id).where(AgentRow.tenant_id == tenant)
    query = (
        select(TurnRow.turn_id)
        .where(
            or_(TurnRow.tenant_id == tenant, TurnRow.agent_id.in_(agents)),
            TurnRow.status.not_in(FINAL_STATUSES),
        )
        .limit(limit)
    )
    return _ids(tx, query)


def delete_stopped_turns(tx: Connection, turn_ids: list[str]) -> None:
    """Delete the turns an erasure has just stopped (`unfinished_turns_of`), with their events and steps."""
    delete_turns(tx, TurnRow.turn_id.in_(turn_ids))


# --- Agents API (beta) agents and a tenant's sessions (the `sessions` and `turns` TTLs prune those above); a
# tenant's session turns go as its detached turns


def _erase_agent_sessions(tx: Connection, tenant: str, limit: int) -> int:
    sessions = _ids(tx, select(BetaSessionRow.session_id).where(BetaSessionRow.tenant_id == tenant).limit(limit))
    if sessions:
        return delete_agent_sessions(tx, sessions, with_turns=False)
    agents = _ids(tx, select(BetaAgentRow.agent_id).where(BetaAgentRow.tenant_id == tenant).limit(limit))
    if agents:
        tx.execute(delete(BetaAgentRow).where(BetaAgentRow.agent_id.in_(agents)))
    return len(agents)


register(Kind("agent_sessions", None, None, _erase_agent_sessions))


def tenant_automations(tx: Connection, tenant: str, limit: int) -> list[str]:
    """Up to `limit` of the tenant's automations: an erasure deletes their Schedules, then `delete_automations`."""
    return _ids(tx, select(AutomationRow.automation_id).where(AutomationRow.tenant_id == tenant).limit(limit))


def delete_automations(tx: Connection, automations: list[str]) -> int:
    """These automations and their logs (their Schedules deleted first: a paused one never runs to delete itself)."""
    if automations:
        tx.execute(delete(AutomationInvocationRow).where(AutomationInvocationRow.automation_id.in_(automations)))
        tx.execute(delete(AutomationRow).where(AutomationRow.automation_id.in_(automations)))
    return len(automations)


def _erase_automations(tx: Connection, tenant: str, limit: int) -> int:
    """What the erasure's Schedule step left (none, normally); an active Schedule left deletes itself at its run."""
    return delete_automations(tx, tenant_automations(tx, tenant, limit))


register(Kind("automations", None, None, _erase_automations))
