"""Container rows: a tenant's containers (their workspace is a directory under the data directory of the
host that holds it: code_sandbox/workspaces.py), the files known in each, and each call run in one."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from store.schema import Base


class ContainerRow(Base):
    """A container: `expires_after_minutes` counts from `last_active_at`, which each call and file change moves."""

    __tablename__ = "containers"
    __table_args__ = (
        Index("ix_containers_tenant_order", "tenant_id", "created_at"),
        Index("ix_containers_expiry", "expires_at"),
    )

    container_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(Text)
    memory_limit: Mapped[str] = mapped_column(String(8))
    network_policy: Mapped[dict[str, Any]] = mapped_column(JSON)
    expires_after_minutes: Mapped[int] = mapped_column(Integer)
    host: Mapped[str | None] = mapped_column(String(255))
    """The worker host holding the workspace; None until a worker first ran a call in it."""
    created_at: Mapped[datetime]
    last_active_at: Mapped[datetime]
    expires_at: Mapped[datetime]
    """`last_active_at` + `expires_after_minutes`, kept in step so the sweep finds expired containers by index."""


class ContainerFileRow(Base):
    """A file in a container's workspace, by its path inside the sandbox (`/workspace/...`). `source`:
    `user` (added through the API) or `assistant` (written by the container's code)."""

    __tablename__ = "container_files"
    __table_args__ = (
        UniqueConstraint("container_id", "path", name="uq_container_files_path"),
        Index("ix_container_files_order", "container_id", "created_at"),
    )

    file_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    container_id: Mapped[str] = mapped_column(ForeignKey("containers.container_id", ondelete="CASCADE"))
    tenant_id: Mapped[str] = mapped_column(String(64))
    path: Mapped[str] = mapped_column(Text)
    bytes: Mapped[int] = mapped_column(Integer)
    source: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime]


class ContainerCallRow(Base):
    """One code or shell call in a container, keyed by the turn's step that runs it: written `started` before
    the code runs and `finished` with its result after, so a call cut by a crash is known as such and never
    run again, and a finished call's result is read back rather than recomputed."""

    __tablename__ = "container_calls"

    call_key: Mapped[str] = mapped_column(String(200), primary_key=True)
    container_id: Mapped[str] = mapped_column(ForeignKey("containers.container_id", ondelete="CASCADE"), index=True)
    status: Mapped[str] = mapped_column(String(16))
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    started_at: Mapped[datetime]
