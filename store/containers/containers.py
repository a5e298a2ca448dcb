"""A tenant's containers, the files known in them, and the record of each call run in one.

A container past its expiry is as gone as a deleted one for every read here; the retention sweep then
deletes its rows and its workspace (activities/container_retention.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import Connection, delete, func, insert, select, tuple_, update

from store.containers.tables import ContainerCallRow, ContainerFileRow, ContainerRow
from store.database import Database

Order = Literal["asc", "desc"]


@dataclass(frozen=True)
class Container:
    container_id: str
    tenant_id: str
    name: str
    memory_limit: str
    network_policy: dict[str, Any]
    expires_after_minutes: int
    host: str | None
    created_at: datetime
    last_active_at: datetime


@dataclass(frozen=True)
class ContainerFile:
    file_id: str
    container_id: str
    path: str
    bytes: int
    source: str
    created_at: datetime


@dataclass(frozen=True)
class CallRecord:
    status: str
    """`started` (the code may have run, in part) or `finished` (`result` holds what it answered)."""
    result: dict[str, Any] | None
    """`started`: the runner's note; `finished`: the call's answer."""


class UnknownCursor(LookupError):
    """The `after` id of a listing is not one of the caller's objects."""


class ContainerLimitReached(Exception):
    """The tenant holds as many live containers as it may."""


_CONTAINER = (
    ContainerRow.container_id,
    ContainerRow.tenant_id,
    ContainerRow.name,
    ContainerRow.memory_limit,
    ContainerRow.network_policy,
    ContainerRow.expires_after_minutes,
    ContainerRow.host,
    ContainerRow.created_at,
    ContainerRow.last_active_at,
)
_FILE = (
    ContainerFileRow.file_id,
    ContainerFileRow.container_id,
    ContainerFileRow.path,
    ContainerFileRow.bytes,
    ContainerFileRow.source,
    ContainerFileRow.created_at,
)


def _container(row: Any) -> Container:
    return Container(*row)


def _file(row: Any) -> ContainerFile:
    return ContainerFile(*row)


def _page(
    tx: Connection, query: Any, key: Any, order: Order, after_row: Any | None, limit: int
) -> tuple[list[Any], bool]:
    created, ident = key
    position = tuple_(created, ident)
    if after_row is not None:
        query = query.where(position < tuple_(*after_row) if order == "desc" else position > tuple_(*after_row))
    ordering = (created.desc(), ident.desc()) if order == "desc" else (created.asc(), ident.asc())
    rows = tx.execute(query.order_by(*ordering).limit(limit + 1)).all()
    return list(rows[:limit]), len(rows) > limit


class ContainerStore:
    def __init__(self, database: Database) -> None:
        self.database = database

    async def create(self, container: Container, max_live: int, now: datetime) -> None:
        """Records the container unless the tenant already holds `max_live` live ones."""

        def write(tx: Connection) -> None:
            live = tx.execute(
                select(func.count())
                .select_from(ContainerRow)
                .where(ContainerRow.tenant_id == container.tenant_id, ContainerRow.expires_at > now)
            ).scalar_one()
            if live >= max_live:
                raise ContainerLimitReached
            expires_at = container.last_active_at + timedelta(minutes=container.expires_after_minutes)
            tx.execute(insert(ContainerRow), {**container.__dict__, "expires_at": expires_at})

        await self.database.write(write)

    async def get(self, tenant: str, container_id: str, now: datetime) -> Container | None:
        def read(tx: Connection) -> Container | None:
            row = tx.execute(
                select(*_CONTAINER).where(
                    ContainerRow.tenant_id == tenant,
                    ContainerRow.container_id == container_id,
                    ContainerRow.expires_at > now,
                )
            ).first()
            return _container(row) if row is not None else None

        return await self.database.read(read)

    async def page(
        self, tenant: str, name: str | None, order: Order, after: str | None, limit: int, now: datetime
    ) -> tuple[list[Container], bool]:
        def read(tx: Connection) -> tuple[list[Container], bool]:
            where = [ContainerRow.tenant_id == tenant, ContainerRow.expires_at > now]
            if name is not None:
                where.append(ContainerRow.name == name)
            after_row = None
            if after is not None:
                after_row = tx.execute(
                    select(ContainerRow.created_at, ContainerRow.container_id).where(
                        ContainerRow.tenant_id == tenant, ContainerRow.container_id == after
                    )
                ).first()
                if after_row is None:
                    raise UnknownCursor(after)
            key = (ContainerRow.created_at, ContainerRow.container_id)
            rows, more = _page(tx, select(*_CONTAINER).where(*where), key, order, after_row, limit)
            return [_container(row) for row in rows], more

        return await self.database.read(read)

    async def delete(self, tenant: str, container_id: str) -> bool:
        def remove(tx: Connection) -> bool:
            tx.execute(delete(ContainerFileRow).where(ContainerFileRow.container_id == container_id))
            tx.execute(delete(ContainerCallRow).where(ContainerCallRow.container_id == container_id))
            gone = tx.execute(
                delete(ContainerRow).where(ContainerRow.tenant_id == tenant, ContainerRow.container_id == container_id)
            )
            return gone.rowcount > 0

        return await self.database.write(remove)

    async def touch(self, container_id: str, now: datetime, host: str | None = None) -> None:
        """The container was used now: its expiry moves on; `host` records where its workspace is."""

        def write(tx: Connection) -> None:
            minutes = tx.execute(
                select(ContainerRow.expires_after_minutes).where(ContainerRow.container_id == container_id)
            ).scalar_one_or_none()
            if minutes is None:
                return
            values: dict[str, Any] = {"last_active_at": now, "expires_at": now + timedelta(minutes=minutes)}
            if host is not None:
                values["host"] = host
            tx.execute(update(ContainerRow).where(ContainerRow.container_id == container_id).values(**values))

        await self.database.write(write)

    async def claim_host(self, container_id: str, host: str) -> str | None:
        """The host holding the container: the one recorded, else `host`, recorded now (the first claim wins);
        None when the container is gone."""

        def write(tx: Connection) -> str | None:
            tx.execute(
                update(ContainerRow)
                .where(ContainerRow.container_id == container_id, ContainerRow.host.is_(None))
                .values(host=host)
            )
            held: str | None = tx.execute(
                select(ContainerRow.host).where(ContainerRow.container_id == container_id)
            ).scalar_one_or_none()
            return held

        return await self.database.write(write)

    async def expired(self, now: datetime, limit: int) -> list[tuple[str, str]]:
        """(tenant, container id) of up to `limit` containers past their expiry."""
        query = (
            select(ContainerRow.tenant_id, ContainerRow.container_id).where(ContainerRow.expires_at <= now).limit(limit)
        )
        return await self.database.read(lambda tx: [(row[0], row[1]) for row in tx.execute(query)])

    async def of_tenant(self, tenant: str, limit: int) -> list[str]:
        query = select(ContainerRow.container_id).where(ContainerRow.tenant_id == tenant).limit(limit)
        return await self.database.read(lambda tx: [row[0] for row in tx.execute(query)])

    # Files

    async def put_file(self, tenant: str, file: ContainerFile) -> ContainerFile:
        """Records a file at its path, or updates the size of the one already there (keeping its id)."""

        def write(tx: Connection) -> ContainerFile:
            row = tx.execute(
                select(*_FILE).where(
                    ContainerFileRow.container_id == file.container_id, ContainerFileRow.path == file.path
                )
            ).first()
            if row is None:
                tx.execute(insert(ContainerFileRow), {**file.__dict__, "tenant_id": tenant})
                return file
            tx.execute(update(ContainerFileRow).where(ContainerFileRow.file_id == row.file_id).values(bytes=file.bytes))
            return ContainerFile(row.file_id, row.container_id, row.path, file.bytes, row.source, row.created_at)

        return await self.database.write(write)

    async def get_file(self, tenant: str, container_id: str, file_id: str) -> ContainerFile | None:
        def read(tx: Connection) -> ContainerFile | None:
            row = tx.execute(
                select(*_FILE).where(
                    ContainerFileRow.tenant_id == tenant,
                    ContainerFileRow.container_id == container_id,
                    ContainerFileRow.file_id == file_id,
                )
            ).first()
            return _file(row) if row is not None else None

        return await self.database.read(read)

    async def file_page(
        self, tenant: str, container_id: str, order: Order, after: str | None, limit: int
    ) -> tuple[list[ContainerFile], bool]:
        def read(tx: Connection) -> tuple[list[ContainerFile], bool]:
            where = [ContainerFileRow.tenant_id == tenant, ContainerFileRow.container_id == container_id]
            after_row = None
            if after is not None:
                after_row = tx.execute(
                    select(ContainerFileRow.created_at, ContainerFileRow.file_id).where(
                        *where, ContainerFileRow.file_id == after
                    )
                ).first()
                if after_row is None:
                    raise UnknownCursor(after)
            key = (ContainerFileRow.created_at, ContainerFileRow.file_id)
            rows, more = _page(tx, select(*_FILE).where(*where), key, order, after_row, limit)
            return [_file(row) for row in rows], more

        return await self.database.read(read)

    async def delete_file(self, tenant: str, container_id: str, file_id: str) -> bool:
        def remove(tx: Connection) -> bool:
            gone = tx.execute(
                delete(ContainerFileRow).where(
                    ContainerFileRow.tenant_id == tenant,
                    ContainerFileRow.container_id == container_id,
                    ContainerFileRow.file_id == file_id,
                )
            )
            return gone.rowcount > 0

        return await self.database.write(remove)

    # Calls

    async def start_call(
        self, call_key: str, container_id: str, now: datetime, note: dict[str, Any]
    ) -> CallRecord | None:
        """Marks the call started (`note`: what its runner wants to know of it after a crash); None when it
        was not known, else what was recorded of it before."""

        def write(tx: Connection) -> CallRecord | None:
            row = tx.execute(
                select(ContainerCallRow.status, ContainerCallRow.result).where(ContainerCallRow.call_key == call_key)
            ).first()
            if row is not None:
                return CallRecord(row.status, row.result)
            tx.execute(
                insert(ContainerCallRow),
                {
                    "call_key": call_key,
                    "container_id": container_id,
                    "status": "started",
                    "result": note,
                    "started_at": now,
                },
            )
            return None

        return await self.database.write(write)

    async def finish_call(self, call_key: str, result: dict[str, Any]) -> None:
        statement = (
            update(ContainerCallRow)
            .where(ContainerCallRow.call_key == call_key)
            .values(status="finished", result=result)
        )
        await self.database.write(lambda tx: tx.execute(statement))

    async def call(self, call_key: str) -> CallRecord | None:
        query = select(ContainerCallRow.status, ContainerCallRow.result).where(ContainerCallRow.call_key == call_key)

        def read(tx: Connection) -> CallRecord | None:
            row = tx.execute(query).first()
            return CallRecord(row.status, row.result) if row is not None else None

        return await self.database.read(read)
