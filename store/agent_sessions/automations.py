"""Agents API automations and their invocation log as records (store/agent_sessions/automation_tables.py).

An invocation row is claimed once per run key (a scheduled occurrence's time, or a manual invocation's id), in a
transaction that first locks the automation's row: concurrent runs of one automation decide one after the other
whether a delivery is still pending, and a retried run finds its own row instead of adding another.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import Connection, Row, delete, insert, select, update

from store.agent_sessions.automation_tables import AutomationInvocationRow, AutomationRow
from store.agent_sessions.sessions import Order, tenant_page_query
from store.database import Database
from store.tenancy.quotas import within_quota

InvocationStatus = Literal["queued", "completed", "failed", "skipped"]


@dataclass(frozen=True)
class AutomationRecord:
    automation_id: str
    tenant_id: str
    kind: str
    body: dict[str, Any]
    """name, expression, timezone, run_at, target, metadata, created_by."""
    status: str
    pause_reason: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class InvocationRecord:
    invocation_id: str
    automation_id: str
    tenant_id: str
    run_key: str
    source: str
    snapshot: dict[str, Any] | None
    scheduled_at: datetime | None
    status: InvocationStatus
    session_id: str | None
    skip_reason: str | None
    error: dict[str, str] | None
    created_at: datetime


def _automation(row: Row[Any]) -> AutomationRecord:
    return AutomationRecord(
        row.automation_id,
        row.tenant_id,
        row.kind,
        dict(row.body),
        row.status,
        row.pause_reason,
        row.created_at,
        row.updated_at,
    )


def _invocation(row: Row[Any]) -> InvocationRecord:
    return InvocationRecord(
        row.invocation_id,
        row.automation_id,
        row.tenant_id,
        row.run_key,
        row.source,
        row.snapshot,
        row.scheduled_at,
        row.status,
        row.session_id,
        row.skip_reason,
        row.error,
        row.created_at,
    )


def _target_session(body: dict[str, Any]) -> str | None:
    target = body.get("target") or {}
    return target.get("session_id") if target.get("type") == "existing_session" else None


class AutomationStore:
    def __init__(self, database: Database) -> None:
        self.database = database

    # -- automations

    async def add(self, record: AutomationRecord, most: int | None = None) -> None:
        """Raises QuotaReached when the tenant has `most` automations already."""
        values = {
            "automation_id": record.automation_id,
            "tenant_id": record.tenant_id,
            "kind": record.kind,
            "body": record.body,
            "status": record.status,
            "pause_reason": record.pause_reason,
            "target_session_id": _target_session(record.body),
            "created_at": record.created_at,
            "updated_at": record.updated_at,
        }

        def run(tx: Connection) -> None:
            tenant_column = AutomationRow.tenant_id
            within_quota(tx, tenant_column, record.tenant_id, most, "DA_MAX_AUTOMATIONS_PER_TENANT", "automations")
            tx.execute(insert(AutomationRow).values(**values))

        await self.database.write(run)

    async def get(self, tenant: str | None, automation_id: str) -> AutomationRecord | None:
        """The automation; `tenant` None: whoever owns it (the worker's delivery)."""
        query = select(AutomationRow.__table__).where(AutomationRow.automation_id == automation_id)
        if tenant is not None:
            query = query.where(AutomationRow.tenant_id == tenant)

        def run(tx: Connection) -> AutomationRecord | None:
            row = tx.execute(query).first()
            return _automation(row) if row else None

        return await self.database.read(run)

    async def change(
        self, tenant: str, automation_id: str, change: Callable[[AutomationRecord], AutomationRecord]
    ) -> AutomationRecord | None:
        """Apply `change` to the automation as stored, in one transaction; None if there is none."""

        def run(tx: Connection) -> AutomationRecord | None:
            row = tx.execute(
                select(AutomationRow.__table__).where(
                    AutomationRow.tenant_id == tenant, AutomationRow.automation_id == automation_id
                )
            ).first()
            if row is None:
                return None
            changed = replace(change(_automation(row)), updated_at=datetime.now(UTC))
            tx.execute(
                update(AutomationRow)
                .where(AutomationRow.automation_id == automation_id)
                .values(
                    body=changed.body,
                    status=changed.status,
                    pause_reason=changed.pause_reason,
                    target_session_id=_target_session(changed.body),
                    updated_at=changed.updated_at,
                )
            )
            return changed

        return await self.database.write(run)

    async def set_status(self, automation_id: str, status: str, pause_reason: str | None = None) -> None:
        await self.database.write(
            lambda tx: tx.execute(
                update(AutomationRow)
                .where(AutomationRow.automation_id == automation_id)
                .values(status=status, pause_reason=pause_reason, updated_at=datetime.now(UTC))
            )
        )

    async def delete(self, tenant: str, automation_id: str) -> bool:
        def run(tx: Connection) -> bool:
            where = (AutomationRow.tenant_id == tenant, AutomationRow.automation_id == automation_id)
            if tx.execute(select(AutomationRow.automation_id).where(*where)).first() is None:
                return False
            tx.execute(delete(AutomationInvocationRow).where(AutomationInvocationRow.automation_id == automation_id))
            tx.execute(delete(AutomationRow).where(*where))
            return True

        return await self.database.write(run)

    async def page(
        self, tenant: str, after: str | None, limit: int, order: Order, session_id: str | None
    ) -> tuple[list[AutomationRecord], bool]:
        """A page of the tenant's automations; LookupError if `after` is not one of them."""
        where = [AutomationRow.target_session_id == session_id] if session_id is not None else []

        def run(tx: Connection) -> tuple[list[AutomationRecord], bool]:
            query = tenant_page_query(tx, AutomationRow, AutomationRow.automation_id, tenant, after, order, where)
            rows = tx.execute(query.limit(limit + 1)).all()
            return [_automation(row) for row in rows[:limit]], len(rows) > limit

        return await self.database.read(run)

    # -- invocations

    async def claim(self, invocation: InvocationRecord, skip_if_pending: bool) -> InvocationRecord | None:
        """Record the invocation unless its run key has one already, which is returned instead. With
        `skip_if_pending`, it is recorded `skipped` (`pending_delivery`) while another delivery of the
        automation is still queued. None: the automation is gone."""

        def run(tx: Connection) -> InvocationRecord | None:
            locked = tx.execute(
                update(AutomationRow)
                .where(AutomationRow.automation_id == invocation.automation_id)
                .values(status=AutomationRow.status)
                .returning(AutomationRow.automation_id)
            ).first()
            if locked is None:
                return None
            found = tx.execute(
                select(AutomationInvocationRow.__table__).where(
                    AutomationInvocationRow.automation_id == invocation.automation_id,
                    AutomationInvocationRow.run_key == invocation.run_key,
                )
            ).first()
            if found is not None:
                return _invocation(found)
            claimed = invocation
            if skip_if_pending:
                pending = tx.execute(
                    select(AutomationInvocationRow.invocation_id).where(
                        AutomationInvocationRow.automation_id == invocation.automation_id,
                        AutomationInvocationRow.status == "queued",
                    )
                ).first()
                if pending is not None:
                    claimed = replace(invocation, status="skipped", skip_reason="pending_delivery")
            values = {name: getattr(claimed, name) for name in InvocationRecord.__dataclass_fields__}
            tx.execute(insert(AutomationInvocationRow).values(**values, updated_at=claimed.created_at))
            return claimed

        return await self.database.write(run)

    async def settle(
        self,
        invocation_id: str,
        status: InvocationStatus,
        session_id: str | None = None,
        error: dict[str, str] | None = None,
        skip_reason: str | None = None,
    ) -> None:
        values: dict[str, Any] = {
            "status": status,
            "error": error,
            "skip_reason": skip_reason,
            "updated_at": datetime.now(UTC),
        }
        if session_id is not None:
            values["session_id"] = session_id
        await self.database.write(
            lambda tx: tx.execute(
                update(AutomationInvocationRow)
                .where(AutomationInvocationRow.invocation_id == invocation_id)
                .values(**values)
            )
        )

    async def invocation(self, tenant: str | None, automation_id: str, invocation_id: str) -> InvocationRecord | None:
        query = select(AutomationInvocationRow.__table__).where(
            AutomationInvocationRow.automation_id == automation_id,
            AutomationInvocationRow.invocation_id == invocation_id,
        )
        if tenant is not None:
            query = query.where(AutomationInvocationRow.tenant_id == tenant)

        def run(tx: Connection) -> InvocationRecord | None:
            row = tx.execute(query).first()
            return _invocation(row) if row else None

        return await self.database.read(run)

    async def invocations(
        self, tenant: str, automation_id: str, after: str | None, limit: int, order: Order
    ) -> tuple[list[InvocationRecord], bool]:
        """A page of the automation's invocations; LookupError if `after` is not one of them."""
        where = [AutomationInvocationRow.automation_id == automation_id]

        def run(tx: Connection) -> tuple[list[InvocationRecord], bool]:
            table = AutomationInvocationRow
            query = tenant_page_query(tx, table, table.invocation_id, tenant, after, order, where)
            rows = tx.execute(query.limit(limit + 1)).all()
            return [_invocation(row) for row in rows[:limit]], len(rows) > limit

        return await self.database.read(run)
