"""Agents: create, read, list and delete (with their sessions and turns)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Row, delete, func, insert, select, update

from domain.agents import Agent, AgentConfig
from store.tenancy.quotas import within_quota
from store.turns.records import Page
from store.turns.rows import StoreBase, delete_turns, read_page, unfinished_turns_of
from store.turns.tables import AgentRow, SessionRow, TurnRow

_AGENTS = AgentRow.__table__


def _agent(row: Row[Any]) -> Agent:
    return Agent(agent_id=row.agent_id, agent_config=AgentConfig.model_validate(row.config), created_at=row.created_at)


class AgentStore(StoreBase):
    async def create_agent(self, tenant: str, agent: Agent, most: int | None = None) -> None:
        """Raises QuotaReached when the tenant has `most` agents already."""
        row = {"agent_id": agent.agent_id, "tenant_id": tenant, "config": agent.agent_config.model_dump(mode="json")}

        def run(tx: Connection) -> None:
            within_quota(tx, AgentRow.tenant_id, tenant, most, "DA_MAX_AGENTS_PER_TENANT", "agents")
            tx.execute(insert(AgentRow).values(**row, created_at=agent.created_at))

        await self.database.write(run)

    async def get_agent(self, tenant: str, agent_id: str) -> Agent | None:
        """The tenant's agent; None for an unknown id and for another tenant's agent alike."""
        query = select(_AGENTS).where(AgentRow.agent_id == agent_id, AgentRow.tenant_id == tenant)
        row = await self.database.read(lambda tx: tx.execute(query).first())
        return _agent(row) if row else None

    async def list_agents(self, tenant: str, start_index: int, limit: int) -> Page[Agent]:
        query = select(_AGENTS).where(AgentRow.tenant_id == tenant).order_by(AgentRow.created_at, AgentRow.agent_id)
        page = await self.database.read(lambda tx: read_page(tx, query, start_index, limit))
        return Page([_agent(row) for row in page.items], page.has_more)

    async def turn_tenant(self, turn_id: str) -> str | None:
        """The tenant that owns the turn (its own for a detached turn, else its agent's); None if it is gone."""
        query = (
            select(func.coalesce(TurnRow.tenant_id, AgentRow.tenant_id))
            .select_from(TurnRow)
            .outerjoin(AgentRow, TurnRow.agent_id == AgentRow.agent_id)
        )
        return await self.database.read(lambda tx: tx.scalar(query.where(TurnRow.turn_id == turn_id)))

    async def delete_agent(self, tenant: str, agent_id: str) -> list[str] | None:
        """Delete the agent with its sessions and their turns; None if there is no such agent.

        Returns the turns that were running or awaiting input: their workflows must be stopped.
        """

        def run(tx: Connection) -> list[str] | None:
            # No-op writes first: they take the agent's and its sessions' row locks (PostgreSQL) or the
            # write lock (SQLite), so no turn can begin in these sessions until they are gone.
            found = tx.execute(
                update(AgentRow)
                .where(AgentRow.agent_id == agent_id, AgentRow.tenant_id == tenant)
                .values(created_at=AgentRow.created_at)
            )
            if found.rowcount == 0:
                return None
            tx.execute(update(SessionRow).where(SessionRow.agent_id == agent_id).values(name=SessionRow.name))
            unfinished = unfinished_turns_of(tx, SessionRow.agent_id == agent_id)
            sessions = select(SessionRow.session_id).where(SessionRow.agent_id == agent_id)
            delete_turns(tx, TurnRow.session_id.in_(sessions))
            tx.execute(delete(SessionRow).where(SessionRow.agent_id == agent_id))
            tx.execute(delete(AgentRow).where(AgentRow.agent_id == agent_id))
            return unfinished

        return await self.database.write(run)

    async def unfinished_turn_ids(self, agent_id: str, session_id: str | None = None) -> list[str]:
        """The turns of an agent (or of one of its sessions) that are running or awaiting input."""
        owned = SessionRow.agent_id == agent_id
        if session_id is not None:
            owned &= SessionRow.session_id == session_id
        return await self.database.read(lambda tx: unfinished_turns_of(tx, owned))
