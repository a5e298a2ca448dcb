"""Creating a session (environment `none`) and starting its first turn: sessions.create from the API, or an
automation's delivery to a new session."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent_sessions.agent_snapshot import AgentChoice, resolve_agent
from agent_sessions.announce import session_event, start_deliveries
from agent_sessions.refusals import SessionRefused
from agent_sessions.services import SessionServices
from agent_sessions.session_turns import SessionTurn, input_messages, new_id, now, start_turn_on
from hosting.fault_points import AFTER_SESSION_ROW, crash_point
from store.agent_sessions.sessions import BetaSessionRecord
from store.tenancy.quotas import QuotaReached


@dataclass(frozen=True)
class NewSession:
    """What a session is created with, the wire's checks (environment, metadata, vaults, review) passed."""

    agent: AgentChoice
    input: str | list[dict[str, Any]] | None
    metadata: dict[str, str] = field(default_factory=dict)
    spend_limit: int | None = None
    """In US cents; None: no spending limit."""
    prompt_cache_options: dict[str, Any] | None = None


@dataclass(frozen=True)
class CreatedSession:
    session: BetaSessionRecord
    turn: SessionTurn | None
    """The turn of the create's `input`; None without input."""


async def create_session(
    services: SessionServices,
    tenant: str,
    new: NewSession,
    session_id: str | None = None,
    idempotency_key: str | None = None,
) -> CreatedSession:
    """Create a session and start its first turn with its input.

    Automations give the session's id and its first turn's idempotency key, derived from the occurrence they
    deliver. Raises SessionRefused (4xx) for anything the caller must change."""
    agent = await resolve_agent(services, tenant, new.agent)
    messages = input_messages(new.input)  # environment `none`: input is required
    created_at = now()
    record = BetaSessionRecord(
        session_id=session_id or new_id("sess"),
        tenant_id=tenant,
        agent_id=new.agent.agent_id,
        body={
            "agent": {"id": new.agent.agent_id or new_id("agent"), **agent},
            "environment": {"type": "none"},
            "metadata": new.metadata,
            "spend_control": {"limit": new.spend_limit},
            "vault_ids": [],
            **({"prompt_cache_options": new.prompt_cache_options} if new.prompt_cache_options else {}),
        },
        current_turn_id=None,
        turn_count=0,
        created_at=created_at,
        last_active_at=created_at,
    )
    created = session_event("agent.session.created", record.session_id, record.session_id)
    try:
        most = services.settings.max_sessions_per_tenant
        deliveries = await services.store.agent_sessions.add_session(record, created, most)
    except QuotaReached as quota:
        raise SessionRefused(409, str(quota), code="limit_reached") from None
    crash_point(AFTER_SESSION_ROW)
    if new.spend_limit is not None:  # before the first turn's first model call, which checks it
        await services.store.spend.set_limit(record.session_id, new.spend_limit)
    if deliveries:
        await start_deliveries(services, record.session_id)
    turn = await start_turn_on(services, tenant, record, messages, idempotency_key)
    stored = await services.store.agent_sessions.session(tenant, record.session_id)
    return CreatedSession(stored or record, turn)
