"""Uploaded files' bytes in a PostgreSQL store: rows of `file_blob_parts`, each at most one part, numbered from 0.

knowledge/blobs.py decides where bytes live and streams them; these are its reads and writes of the table, so
every API process and worker reaches a file's bytes without a shared disk.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Connection, delete, exists, func, insert, select, update

from store.database import Database
from store.knowledge.tables import FileBlobPartRow, FileRow


class BlobParts:
    def __init__(self, database: Database) -> None:
        self._database = database

    async def part(self, file_id: str, part: int) -> bytes | None:
        """The bytes of one part, or None past the file's last part."""
        query = select(FileBlobPartRow.data).where(FileBlobPartRow.file_id == file_id, FileBlobPartRow.part == part)
        return await self._database.read(lambda tx: tx.execute(query).scalar())

    async def add(self, file_id: str, part: int, data: bytes) -> None:
        row = {"file_id": file_id, "part": part, "data": data, "created_at": datetime.now(UTC)}
        await self._database.write(lambda tx: tx.execute(insert(FileBlobPartRow), row))

    async def delete(self, file_id: str) -> None:
        """Every part of the file (an upload aborted half-way, or a deleted file)."""
        await self._database.write(
            lambda tx: tx.execute(delete(FileBlobPartRow).where(FileBlobPartRow.file_id == file_id))
        )

    async def unowned(self, cutoff: datetime, limit: int) -> list[str]:
        """Files whose parts no file row owns and were written before the cutoff: an upload a crash cut short
        (or a delete that removed the row but not the bytes). Parts without a date are dated now, so they go
        once they are as old."""
        unowned = ~exists().where(FileRow.file_id == FileBlobPartRow.file_id)

        def write(tx: Connection) -> list[str]:
            tx.execute(
                update(FileBlobPartRow)
                .where(FileBlobPartRow.created_at.is_(None), unowned)
                .values(created_at=datetime.now(UTC))
            )
            query = (
                select(FileBlobPartRow.file_id)
                .where(unowned)
                .group_by(FileBlobPartRow.file_id)
                .having(func.max(FileBlobPartRow.created_at) < cutoff)
                .limit(limit)
            )
            return list(tx.execute(query).scalars())

        return await self._database.write(write)
