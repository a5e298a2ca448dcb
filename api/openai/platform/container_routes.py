"""The Containers API: a tenant's sandbox containers (create with files copied in, list, retrieve, delete).

Only what the sandbox does is accepted: `network_policy` `disabled` (the sandbox has no network at all, so an
allowlist is refused by name rather than pretended), a `memory_limit` no larger than the operator's
DA_SANDBOX_MEMORY_MB (a request may only narrow it), no `skills`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

from api.containers import MEMORY_LIMITS_MB, ContainersDep
from api.guards.tenancy import TenantDep
from api.openai.errors import ERROR_RESPONSES, OpenAIError, invalid
from api.openai.pages import cursors
from store.containers.containers import Container, UnknownCursor

router = APIRouter(tags=["Containers"], responses=ERROR_RESPONSES)

MAX_EXPIRY_MINUTES = 7 * 24 * 60


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExpiresAfter(_Strict):
    anchor: Literal["last_active_at"]
    minutes: int = Field(ge=1, le=MAX_EXPIRY_MINUTES)


class NetworkPolicy(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str


class CreateContainer(_Strict):
    name: str = Field(min_length=1, max_length=256)
    expires_after: ExpiresAfter | None = None
    file_ids: list[str] = Field(default_factory=list, max_length=100)
    memory_limit: str | None = None
    network_policy: NetworkPolicy | None = None
    skills: list[Any] | None = None


class ExpiresAfterOut(BaseModel):
    anchor: Literal["last_active_at"] = "last_active_at"
    minutes: int


class NetworkPolicyOut(BaseModel):
    type: Literal["disabled"] = "disabled"


class ContainerObject(BaseModel):
    id: str
    object: Literal["container"] = "container"
    created_at: int
    name: str
    status: Literal["running"] = "running"
    expires_after: ExpiresAfterOut
    last_active_at: int
    memory_limit: str
    network_policy: NetworkPolicyOut = Field(default_factory=NetworkPolicyOut)


class ContainerList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ContainerObject]
    first_id: str | None
    last_id: str | None
    has_more: bool


class ContainerDeleted(BaseModel):
    id: str
    object: Literal["container.deleted"] = "container.deleted"
    deleted: bool = True


def container_object(container: Container) -> ContainerObject:
    return ContainerObject(
        id=container.container_id,
        created_at=int(container.created_at.timestamp()),
        name=container.name,
        expires_after=ExpiresAfterOut(minutes=container.expires_after_minutes),
        last_active_at=int(container.last_active_at.timestamp()),
        memory_limit=container.memory_limit,
    )


def check_sandbox_options(
    memory_limit: str | None,
    network_policy: dict[str, Any] | None,
    skills: list[Any] | None,
    operator_mb: int,
    prefix: str = "",
) -> None:
    """Refuses, by name, what the sandbox cannot give: a network, more memory than the operator allows,
    skills. `prefix`: where the fields sit in the request (`tools[0].container.`); the error's `param` is
    the top-level field, its message the full path."""

    def refuse(field: str, message: str) -> OpenAIError:
        return invalid(f"{prefix}{field}: {message}", prefix.split("[", 1)[0] or field)

    if network_policy is not None and network_policy.get("type") != "disabled":
        raise refuse(
            "network_policy",
            f"type {network_policy.get('type')!r} is not supported: containers here have no network at all; "
            "use type 'disabled' or leave it out.",
        )
    if memory_limit is not None:
        if memory_limit not in MEMORY_LIMITS_MB:
            raise refuse("memory_limit", f"must be one of {list(MEMORY_LIMITS_MB)}.")
        if MEMORY_LIMITS_MB[memory_limit] > operator_mb:
            raise refuse(
                "memory_limit", f"{memory_limit!r} is more than this server allows a container ({operator_mb} MB)."
            )
    if skills:
        raise refuse("skills", "skills are not supported by this server.")


@router.post("/containers", response_model=ContainerObject)
async def create_container(body: CreateContainer, tenant: TenantDep, containers: ContainersDep) -> ContainerObject:
    policy = body.network_policy.model_dump() if body.network_policy else None
    check_sandbox_options(body.memory_limit, policy, body.skills, containers.settings.sandbox_memory_mb)
    if len(set(body.file_ids)) != len(body.file_ids):
        raise invalid("file_ids names a file more than once.", "file_ids")
    minutes = body.expires_after.minutes if body.expires_after else None
    container = await containers.create(tenant, body.name, body.file_ids, body.memory_limit, minutes)
    return container_object(container)


@router.get("/containers", response_model=ContainerList)
async def list_containers(
    tenant: TenantDep,
    containers: ContainersDep,
    after: Annotated[str | None, Query(min_length=1)] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    order: Literal["asc", "desc"] = "desc",
    name: str | None = None,
) -> ContainerList:
    try:
        page, has_more = await containers.store.page(tenant, name, order, after, limit, datetime.now(UTC))
    except UnknownCursor:
        raise OpenAIError(404, f"'after' names no container of yours: {after!r}.", "after") from None
    data = [container_object(container) for container in page]
    return ContainerList(data=data, **cursors(data), has_more=has_more)


@router.get("/containers/{container_id}", response_model=ContainerObject)
async def retrieve_container(container_id: str, tenant: TenantDep, containers: ContainersDep) -> ContainerObject:
    return container_object(await containers.owned(tenant, container_id))


@router.delete("/containers/{container_id}", response_model=ContainerDeleted)
async def delete_container(container_id: str, tenant: TenantDep, containers: ContainersDep) -> ContainerDeleted:
    """The container goes with its files and its workspace; a kernel still running in it stops at its next call."""
    await containers.owned(tenant, container_id)
    await containers.delete(tenant, container_id)
    return ContainerDeleted(id=container_id)
