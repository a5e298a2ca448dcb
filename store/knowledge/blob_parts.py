"""Uploaded files' bytes in a PostgreSQL store: rows of `file_blob_parts`, each at most one part, numbered from 0.

knowledge/blobs.py decides where bytes live and streams them; these are its reads and writes of the table, so
every API process and worker reaches a file's bytes without a shared disk.
"""

from __future__ import annotations

from sqlalchemy import delete, insert, select

from store.database import Database
from store.knowledge.tables import FileBlobPartRow


class BlobParts:
    def __init__(self, database: Database) -> None:
        self._database = database

    async def part(self, file_id: str, part: int) -> bytes | None:
        """The bytes of one part, or None past the file's last part."""
        query = select(FileBlobPartRow.data).where(FileBlobPartRow.file_id == file_id, FileBlobPartRow.part == part)
        return await self._database.read(lambda tx: tx.execute(query).scalar())

    async def add(self, file_id: str, part: int, data: bytes) -> None:
        row = {"file_id": file_id, "part": part, "data": data}
        await self._database.write(lambda tx: tx.execute(insert(FileBlobPartRow), row))

    async def delete(self, file_id: str) -> None:
        """Every part of the file (an upload aborted half-way, or a deleted file)."""
        await self._database.write(
            lambda tx: tx.execute(delete(FileBlobPartRow).where(FileBlobPartRow.file_id == file_id))
        )
