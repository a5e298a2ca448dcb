"""The llama-stack 0.2.x vector DBs: register, list, get, unregister. A vector DB is a vector store underneath,
so the OpenAI dialect's routes see and search it too.

A vector DB id is its tenant's name: two tenants may each register `docs`. The vector store underneath has an
id made of both (`vector_db_store_id`), so neither sees nor blocks the other's. Vector stores are addressed
here by their own id as well (`vs_…`, and the plain ids of vector DBs registered before ids were per tenant).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.exc import IntegrityError

from api.guards.tenancy import TenantDep
from api.knowledge import Knowledge, KnowledgeDep, embedding_model
from configuration.model_specs import BUILTIN_EMBEDDING_MODEL_ID
from knowledge.deletion import delete_vector_store
from store.knowledge.records import LimitReached, VectorStore
from store.knowledge.vector_stores import vector_db_store_id

router = APIRouter(tags=["VectorDBs"])


class RegisterVectorDb(BaseModel):
    model_config = ConfigDict(extra="forbid")

    vector_db_id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")
    embedding_model: str = BUILTIN_EMBEDDING_MODEL_ID
    embedding_dimension: int | None = Field(default=None, gt=0)
    provider_id: str | None = None
    provider_vector_db_id: str | None = None


class VectorDB(BaseModel):
    identifier: str
    provider_resource_id: str
    provider_id: str
    type: Literal["vector_db"] = "vector_db"
    embedding_model: str
    embedding_dimension: int


class VectorDBList(BaseModel):
    data: list[VectorDB]


def engine_name(knowledge: Knowledge) -> str:
    return "pgvector" if knowledge.settings.store_url.startswith("postgresql") else "sqlite-vec"


def vector_db_id(tenant: str, store: VectorStore) -> str:
    """The id the tenant knows the store by here: the name it registered, or the store's own id."""
    registered = store.name is not None and vector_db_store_id(tenant, store.name) == store.vector_store_id
    return store.name if registered and store.name is not None else store.vector_store_id


def vector_db(knowledge: Knowledge, tenant: str, store: VectorStore) -> VectorDB:
    identifier = vector_db_id(tenant, store)
    return VectorDB(
        identifier=identifier,
        provider_resource_id=store.provider_vector_db_id or identifier,
        provider_id=engine_name(knowledge),
        embedding_model=store.embedding_model,
        embedding_dimension=store.embedding_dimension,
    )


async def find_vector_db(knowledge: Knowledge, tenant: str, vector_db_id: str) -> VectorStore | None:
    """The tenant's vector DB of this id, or its vector store of this id; None if it has neither."""
    return await knowledge.stores.get_vector_db(tenant, vector_db_id)


async def owned_vector_db(knowledge: Knowledge, tenant: str, vector_db_id: str) -> VectorStore:
    store = await find_vector_db(knowledge, tenant, vector_db_id)
    if store is None:
        raise HTTPException(404, f"Vector DB {vector_db_id!r} is not registered; register it with POST /v1/vector-dbs")
    return store


@router.post("/vector-dbs", response_model=VectorDB)
async def register_vector_db(body: RegisterVectorDb, tenant: TenantDep, knowledge: KnowledgeDep) -> VectorDB:
    if body.provider_id is not None and body.provider_id != engine_name(knowledge):
        raise HTTPException(
            400,
            f"provider_id {body.provider_id!r} is not a vector provider here: this server's vector DBs are on "
            f"{engine_name(knowledge)!r} (omit provider_id)",
        )
    model = embedding_model(knowledge, body.embedding_model)
    if body.embedding_dimension is not None and body.embedding_dimension != model.dimension:
        raise HTTPException(
            400,
            f"{body.embedding_model!r} makes vectors of {model.dimension} dimensions, not {body.embedding_dimension}",
        )
    existing = await find_vector_db(knowledge, tenant, body.vector_db_id)
    if existing is not None:
        if existing.embedding_model != model.model_id:
            raise HTTPException(
                400, f"Vector DB {body.vector_db_id!r} is registered with {existing.embedding_model!r} already"
            )
        return vector_db(knowledge, tenant, existing)
    now = datetime.now(UTC)
    store = VectorStore(
        vector_store_id=vector_db_store_id(tenant, body.vector_db_id),
        name=body.vector_db_id,
        metadata={},
        embedding_model=model.model_id,
        embedding_dimension=model.dimension,
        expires_after=None,
        created_at=now,
        last_active_at=now,
        provider_vector_db_id=body.provider_vector_db_id,
    )
    try:
        await knowledge.stores.create(tenant, store, knowledge.settings.max_vector_stores_per_tenant)
    except LimitReached as quota:
        raise HTTPException(400, str(quota)) from None
    except IntegrityError:
        raise HTTPException(400, f"The vector DB id {body.vector_db_id!r} is taken; choose another") from None
    return vector_db(knowledge, tenant, store)


@router.get("/vector-dbs", response_model=VectorDBList)
async def list_vector_dbs(tenant: TenantDep, knowledge: KnowledgeDep) -> VectorDBList:
    """Every vector DB of the tenant (this dialect's list has no pages), read a page at a time."""
    data: list[VectorDB] = []
    after = None
    while True:
        stores, more = await knowledge.stores.page(tenant, "asc", after, knowledge.settings.page_limit_max)
        data += [vector_db(knowledge, tenant, store) for store in stores]
        if not more or not stores:
            return VectorDBList(data=data)
        after = stores[-1].vector_store_id


@router.get("/vector-dbs/{vector_db_id}", response_model=VectorDB)
async def get_vector_db(vector_db_id: str, tenant: TenantDep, knowledge: KnowledgeDep) -> VectorDB:
    return vector_db(knowledge, tenant, await owned_vector_db(knowledge, tenant, vector_db_id))


@router.delete("/vector-dbs/{vector_db_id}")
async def unregister_vector_db(vector_db_id: str, tenant: TenantDep, knowledge: KnowledgeDep) -> None:
    store = await find_vector_db(knowledge, tenant, vector_db_id)
    """The vector DB, its chunks, and the files `rag-tool/insert` stored for its documents."""
    if store is None or not await delete_vector_store(
        knowledge.stores, knowledge.files, knowledge.blobs, tenant, store.vector_store_id
    ):
        raise HTTPException(404, f"Vector DB {vector_db_id!r} is not registered")
