"""The knowledge tables' lifecycle on SQLite and PostgreSQL: nothing is attached to a deleted store or file, and
an attachment left by an older release with its store gone is found and removed, not failed on forever."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy import Connection, insert, select, update

from knowledge.blob_sweep import remove_unowned_blobs
from knowledge.blobs import PART_BYTES, DirectoryBlobs, blob_store
from knowledge.engines import vector_index
from store.database import open_database
from store.knowledge.files import StoredFile
from store.knowledge.quotas import FileQuota
from store.knowledge.records import Attachment, FileGone, LimitReached, VectorStore
from store.knowledge.tables import FileBlobPartRow, VectorStoreFileRow
from store.repository import Store
from store.upgrade import upgrade_store
from tests.support.databases import store_url

NOW = datetime(2026, 3, 1, tzinfo=UTC)
UNLIMITED = FileQuota(1_000_000, 1 << 50)
STRATEGY = {"type": "static", "static": {"max_chunk_size_tokens": 800, "chunk_overlap_tokens": 400}}


@pytest.fixture(params=["sqlite", "postgresql"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[Store, str]]:
    with store_url(request.param, tmp_path) as url:
        await upgrade_store(url)
        database = open_database(url)
        try:
            yield Store(database, vector_index(url)), url
        finally:
            await database.dispose()


async def _vector_store(store: Store, vector_store_id: str) -> None:
    await store.vector_stores.create(
        "t", VectorStore(vector_store_id, "docs", {}, "all-MiniLM-L6-v2", 384, None, NOW, NOW, None), 100
    )


async def _file(store: Store, file_id: str) -> None:
    await store.files.add("t", StoredFile(file_id, "a.txt", "assistants", 3, NOW, None), UNLIMITED)


async def _attachments(store: Store) -> list[tuple[str, str]]:
    def read(tx: Connection) -> list[tuple[str, str]]:
        rows = tx.execute(select(VectorStoreFileRow.vector_store_id, VectorStoreFileRow.file_id)).all()
        return [(row[0], row[1]) for row in rows]

    return await store.database.read(read)


async def test_a_file_deleted_before_its_attach_commits_is_refused_not_attached(store: tuple[Store, str]) -> None:
    knowledge, _ = store
    await _vector_store(knowledge, "vs_a")
    await _file(knowledge, "file-kept")
    with pytest.raises(FileGone, match="file-gone"):
        await knowledge.vector_stores.attach(
            "t", "vs_a", [Attachment("file-kept", {}, STRATEGY), Attachment("file-gone", {}, STRATEGY)], NOW, 100
        )
    assert await _attachments(knowledge) == []
    assert (await knowledge.vector_stores.get("t", "vs_a")).file_counts.total == 0


async def test_an_orphaned_attachment_is_found_and_dropped(store: tuple[Store, str]) -> None:
    knowledge, _ = store
    await _vector_store(knowledge, "vs_kept")
    await _file(knowledge, "file-a")
    await knowledge.vector_stores.attach("t", "vs_kept", [Attachment("file-a", {}, STRATEGY)], NOW, 100)
    orphan = {
        "vector_store_id": "vs_gone",
        "file_id": "file-a",
        "status": "in_progress",
        "attributes": {},
        "chunking_strategy": STRATEGY,
        "created_at": NOW,
        "ingestion_id": "x",
    }
    await knowledge.database.write(lambda tx: tx.execute(insert(VectorStoreFileRow), orphan))
    pending = await knowledge.vector_stores.in_progress_since(datetime.now(UTC), 10)
    assert {(p.vector_store_id, p.store_gone) for p in pending} == {("vs_kept", False), ("vs_gone", True)}
    assert not await knowledge.vector_stores.drop_orphan("vs_kept", "file-a")
    assert await knowledge.vector_stores.fail_ended("vs_gone", "file-a", "x", {"code": "server_error", "message": "m"})
    assert await _attachments(knowledge) == [("vs_kept", "file-a")]


async def test_an_attach_racing_a_store_delete_on_postgresql_leaves_no_orphan(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    with store_url("postgresql", tmp_path) as url:
        await upgrade_store(url)
        database = open_database(url)
        knowledge = Store(database, vector_index(url))
        try:
            await _vector_store(knowledge, "vs_race")
            await _file(knowledge, "file-a")
            deleter = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
            try:
                # The delete's transaction, as stores.delete runs it: the store row locked, then its rows gone.
                deleting = deleter.transaction()
                await deleting.start()
                await deleter.execute("SELECT 1 FROM vector_stores WHERE vector_store_id = 'vs_race' FOR UPDATE")
                await deleter.execute("DELETE FROM vector_store_files WHERE vector_store_id = 'vs_race'")
                await deleter.execute("DELETE FROM vector_stores WHERE vector_store_id = 'vs_race'")
                attach = asyncio.create_task(
                    knowledge.vector_stores.attach("t", "vs_race", [Attachment("file-a", {}, STRATEGY)], NOW, 100)
                )
                deadline = time.monotonic() + 30
                while not attach.done():  # until the attach waits on the store's lock, or ran without it
                    waiting = await deleter.fetchval(
                        "SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype IN ('transactionid', 'tuple')"
                    )
                    if waiting:
                        break
                    assert time.monotonic() < deadline, "the attach neither finished nor waited"
                    await asyncio.sleep(0.05)
                await deleting.commit()
                assert await attach is None
            finally:
                await deleter.close()
            assert await _attachments(knowledge) == []
        finally:
            await database.dispose()


async def test_bytes_no_file_row_owns_are_swept_an_hour_on(store: tuple[Store, str], tmp_path: Path) -> None:
    knowledge, url = store
    blobs = blob_store(url, knowledge.database, tmp_path / "blobs")
    for file_id in ("file-owned", "file-crashed", "file-uploading"):
        writer = blobs.writer(file_id)
        await writer.write(b"x" * (PART_BYTES + 10))
        if file_id == "file-owned":
            await writer.commit()
            await _file(knowledge, file_id)
        elif file_id == "file-crashed":
            await writer.commit()  # the process died before the row was written
    # An hour on (the clocks of both kinds of store set back instead).
    long_ago = datetime.now(UTC) - timedelta(hours=2)
    if isinstance(blobs, DirectoryBlobs):
        for path in blobs.root.iterdir():
            if "uploading" not in path.name:
                os.utime(path, (long_ago.timestamp(), long_ago.timestamp()))
    else:
        old = update(FileBlobPartRow).where(FileBlobPartRow.file_id != "file-uploading").values(created_at=long_ago)
        await knowledge.database.write(lambda tx: tx.execute(old))
    assert await remove_unowned_blobs(blobs, knowledge.files) == 1
    assert [len(data) async for data in blobs.read("file-owned")]
    assert await blobs.unowned(knowledge.files.existing, datetime.now(UTC), 10) == ["file-uploading"]
    with pytest.raises(FileNotFoundError):
        async for _ in DirectoryBlobs(tmp_path / "blobs").read("file-crashed"):
            pass
    if not isinstance(blobs, DirectoryBlobs):
        parts = await knowledge.database.read(
            lambda tx: set(tx.execute(select(FileBlobPartRow.file_id).distinct()).scalars())
        )
        assert parts == {"file-owned", "file-uploading"}


async def test_tenant_quotas_hold_under_concurrent_requests(store: tuple[Store, str]) -> None:
    knowledge, _ = store
    quota = FileQuota(max_files=3, max_bytes=1_000)

    async def upload(number: int) -> bool:
        try:
            await knowledge.files.add("t", StoredFile(f"file-{number}", "a.txt", "assistants", 10, NOW, None), quota)
        except LimitReached as refused:
            assert "DA_MAX_FILES_PER_TENANT" in str(refused)
            return False
        return True

    assert sum(await asyncio.gather(*(upload(number) for number in range(12)))) == 3
    await knowledge.files.add("other", StoredFile("file-other", "a.txt", "assistants", 10, NOW, None), quota)
    with pytest.raises(LimitReached, match="DA_MAX_FILE_BYTES_PER_TENANT"):
        await knowledge.files.add("u", StoredFile("file-big", "a.txt", "assistants", 1_001, NOW, None), quota)

    async def create(number: int) -> bool:
        made = VectorStore(f"vs_{number}", "docs", {}, "m", 384, None, NOW, NOW, None)
        try:
            await knowledge.vector_stores.create("t", made, 2)
        except LimitReached as refused:
            assert "DA_MAX_VECTOR_STORES_PER_TENANT" in str(refused)
            return False
        return True

    assert sum(await asyncio.gather(*(create(number) for number in range(12)))) == 2


async def test_the_files_per_store_limit_holds_under_concurrent_attaches(store: tuple[Store, str]) -> None:
    knowledge, _ = store
    await _vector_store(knowledge, "vs_busy")
    for number in range(10):
        await _file(knowledge, f"file-{number}")

    async def attach(number: int) -> bool:
        try:
            await knowledge.vector_stores.attach("t", "vs_busy", [Attachment(f"file-{number}", {}, STRATEGY)], NOW, 3)
        except LimitReached as refused:
            assert "DA_MAX_FILES_PER_VECTOR_STORE" in str(refused)
            return False
        return True

    assert sum(await asyncio.gather(*(attach(number) for number in range(10)))) == 3
    assert len(await _attachments(knowledge)) == 3


async def test_the_chunks_per_store_limit_holds_under_concurrent_ingestions(store: tuple[Store, str]) -> None:
    knowledge, _ = store
    await _vector_store(knowledge, "vs_chunks")
    for number in range(5):
        await _file(knowledge, f"file-{number}")
    attachments = [Attachment(f"file-{number}", {}, STRATEGY) for number in range(5)]
    attached = await knowledge.vector_stores.attach("t", "vs_chunks", attachments, NOW, 100)
    assert attached is not None

    async def ingest(file_id: str, ingestion_id: str | None) -> bool:
        try:
            await knowledge.vector_stores.write_chunks(
                "vs_chunks", file_id, ingestion_id, 0, 10, [("text", 1)] * 10, 25
            )
        except LimitReached as refused:
            assert "DA_MAX_CHUNKS_PER_VECTOR_STORE" in str(refused)
            return False
        return True

    assert sum(await asyncio.gather(*(ingest(file.file_id, file.ingestion_id) for file in attached))) == 2
