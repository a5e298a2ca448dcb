"""Revision 0021 on a store an earlier release left: a `failed` attachment whose file was deleted mid-attach
goes (it was counted in `file_counts` forever), while every attachment whose file exists stays, failed or not."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Connection, text

from store.upgrade import upgrade_store
from tests.store.test_migrations import on
from tests.support.databases import store_url

NOW = datetime(2026, 11, 1, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with store_url(request.param, tmp_path) as made:
        yield made


def _rows_an_earlier_release_left(connection: Connection) -> None:
    connection.execute(
        text(
            "INSERT INTO vector_stores (vector_store_id, tenant_id, name, metadata, embedding_model, "
            "embedding_dimension, created_at, last_active_at) VALUES "
            "('vs_1', 'default', 'docs', '{}', 'm', 4, :now, :now)"
        ),
        {"now": NOW},
    )
    connection.execute(
        text(
            "INSERT INTO files (file_id, tenant_id, filename, purpose, bytes, created_at) VALUES "
            "('file-kept', 'default', 'a.txt', 'assistants', 3, :now), "
            "('file-failed-kept', 'default', 'b.bin', 'assistants', 3, :now)"
        ),
        {"now": NOW},
    )
    for file_id, status in (
        ("file-kept", "completed"),
        ("file-failed-kept", "failed"),
        ("file-deleted", "failed"),
        ("file-deleted-in-progress", "in_progress"),
    ):
        connection.execute(
            text(
                "INSERT INTO vector_store_files (vector_store_id, file_id, status, attributes, chunking_strategy, "
                "usage_bytes, chunk_count, created_at) VALUES ('vs_1', :file_id, :status, '{}', '{}', 0, 0, :now)"
            ),
            {"file_id": file_id, "status": status, "now": NOW},
        )


def test_failed_attachments_of_deleted_files_go_and_the_rest_stay(url: str) -> None:
    asyncio.run(upgrade_store(url, "0020"))
    asyncio.run(on(url, _rows_an_earlier_release_left))

    asyncio.run(upgrade_store(url, "0021"))

    def attachments(connection: Connection) -> list[tuple[str, str]]:
        rows = connection.execute(text("SELECT file_id, status FROM vector_store_files ORDER BY file_id"))
        return [(row[0], row[1]) for row in rows]

    assert asyncio.run(on(url, attachments)) == [
        # An attachment in progress is the ingestion sweep's to finish (it fails it, then the file's delete
        # detaches it): not this revision's.
        ("file-deleted-in-progress", "in_progress"),
        ("file-failed-kept", "failed"),
        ("file-kept", "completed"),
    ]
