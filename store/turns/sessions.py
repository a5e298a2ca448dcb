"""Sessions: create, read, list and delete (with their turns)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Connection, delete, func, insert, select, update

from domain.turns import Session, Turn
from store.turns.records import LimitReached, Page
from store.turns.rows import StoreBase, delete_turns, load_turns, read_page, unfinished_turns_of
from store.turns.tables import AgentRow, SessionRow, TurnRow

_SESSIONS = SessionRow.__table__


class SessionStore(StoreBase):
    async def create_session(
        self, agent_id: str, session_id: str, name: str, started_at: datetime, most: int | None = None
    ) -> None:
        """Add a session to the agent, or raise LimitReached when it already has `most`."""
        row = {"session_id": session_id, "agent_id": agent_id, "name": name, "started_at": started_at}

        def run(tx: Connection) -> None:
            # Locks the agent's row first (a no-op write): concurrent creations count one after another.
            tx.execute(update(AgentRow).where(AgentRow.agent_id == agent_id).values(created_at=AgentRow.created_at))
            existing = select(func.count()).select_from(SessionRow).where(SessionRow.agent_id == agent_id)
            if most is not None and (tx.scalar(existing) or 0) >= most:
                raise LimitReached(
                    f"Agent {agent_id} has {most} sessions, the most allowed (DA_MAX_SESSIONS_PER_AGENT); "
                    "delete sessions it no longer needs"
                )
            tx.execute(insert(SessionRow).values(**row))

        await self.database.write(run)

    async def get_session(
        self, agent_id: str, session_id: str, turn_ids: Sequence[str] | None = None
    ) -> Session | None:
        def run(tx: Connection) -> Session | None:
            row = tx.execute(select(_SESSIONS).where(SessionRow.session_id == session_id)).first()
            if row is None or row.agent_id != agent_id:
                return None
            turns = load_turns(tx, session_id, turn_ids=turn_ids)
            return Session(session_id=row.session_id, session_name=row.name, turns=turns, started_at=row.started_at)

        return await self.database.read(run)

    async def latest_turn(self, session_id: str) -> Turn | None:
        """The session's most recently started turn."""

        def run(tx: Connection) -> Turn | None:
            latest = select(TurnRow.turn_id).where(TurnRow.session_id == session_id)
            turn_id = tx.scalar(latest.order_by(TurnRow.started_at.desc()).limit(1))
            return load_turns(tx, session_id, turn_ids=[turn_id])[0] if turn_id else None

        return await self.database.read(run)

    async def session_exists(self, agent_id: str, session_id: str) -> bool:
        owner = await self.database.read(
            lambda tx: tx.scalar(select(SessionRow.agent_id).where(SessionRow.session_id == session_id))
        )
        return owner == agent_id

    async def list_sessions(self, agent_id: str, start_index: int, limit: int) -> Page[Session]:
        query = (
            select(_SESSIONS)
            .where(SessionRow.agent_id == agent_id)
            .order_by(SessionRow.started_at, SessionRow.session_id)
        )
        page = await self.database.read(lambda tx: read_page(tx, query, start_index, limit))
        sessions = [Session(session_id=r.session_id, session_name=r.name, started_at=r.started_at) for r in page.items]
        return Page(sessions, page.has_more)

    async def delete_session(self, agent_id: str, session_id: str) -> list[str] | None:
        """Delete the session and its turns; None if the agent has no such session.

        Returns the turns that were running or awaiting input: their workflows must be stopped.
        """
        owned = (SessionRow.session_id == session_id) & (SessionRow.agent_id == agent_id)

        def run(tx: Connection) -> list[str] | None:
            # A no-op write first takes the session's row lock (PostgreSQL) or the write lock (SQLite),
            # so no turn can begin in it until it is gone.
            found = tx.execute(update(SessionRow).where(owned).values(name=SessionRow.name))
            if found.rowcount == 0:
                return None
            unfinished = unfinished_turns_of(tx, owned)
            delete_turns(tx, TurnRow.session_id == session_id)
            tx.execute(delete(SessionRow).where(owned))
            return unfinished

        return await self.database.write(run)
