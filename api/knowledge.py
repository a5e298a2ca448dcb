"""What the knowledge routes of both dialects share (models, embeddings, files, vector stores), made once per
process by the app's lifespan and injected like the turn services (api/services.py).

Its refusals are plain HTTPExceptions: on the OpenAI paths the error envelope (api/openai/errors.py) gives
them OpenAI's shape, and the llama-stack paths keep their `detail`; so neither dialect depends on the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from temporalio.client import Client

from configuration.settings import Settings
from hosting.fault_points import AFTER_ATTACHMENT_ROW, crash_point
from knowledge.blobs import BlobStore, blob_store
from knowledge.embeddings import EmbeddingCatalog, EmbeddingModel, UnknownEmbeddingModel
from knowledge.ingestion_starter import IngestionStarter
from store.knowledge.files import FileStore, StoredFile
from store.knowledge.quotas import FileQuota
from store.knowledge.records import Attachment, FileGone, LimitReached, VectorStoreFile
from store.knowledge.vector_stores import VectorStores
from store.repository import Store


@dataclass(frozen=True)
class Knowledge:
    settings: Settings
    embeddings: EmbeddingCatalog
    files: FileStore
    blobs: BlobStore
    stores: VectorStores
    ingestion: IngestionStarter


def knowledge_for(settings: Settings, store: Store, client: Client) -> Knowledge:
    return Knowledge(
        settings,
        EmbeddingCatalog(settings),
        store.files,
        blob_store(settings.store_url, store.database, settings.blob_dir),
        store.vector_stores,
        IngestionStarter(client, settings.task_queue),
    )


async def get_knowledge(request: Request) -> Knowledge:
    knowledge: Knowledge = request.app.state.knowledge
    return knowledge


KnowledgeDep = Annotated[Knowledge, Depends(get_knowledge)]


def embedding_model(knowledge: Knowledge, model_id: str) -> EmbeddingModel:
    """The embedding model of that id, or a 400 listing them."""
    try:
        return knowledge.embeddings.get(model_id)
    except UnknownEmbeddingModel as exc:
        raise HTTPException(400, str(exc)) from None


async def owned_file(knowledge: Knowledge, tenant: str, file_id: str) -> StoredFile:
    """The tenant's live file, or the 404 an unknown (or expired, or another tenant's) file gets."""
    file = await knowledge.files.get(tenant, file_id)
    if file is None or (file.expires_at is not None and file.expires_at <= datetime.now(UTC)):
        raise HTTPException(404, f"File with id '{file_id}' not found.")
    return file


async def attach_files(
    knowledge: Knowledge,
    tenant: str,
    vector_store_id: str,
    attachments: list[Attachment],
    batch_id: str | None = None,
) -> list[VectorStoreFile]:
    """Attach the tenant's files and start their ingestion; a 404 names an unknown file, a 400 a passed limit."""
    for attachment in attachments:
        await owned_file(knowledge, tenant, attachment.file_id)
    try:
        attached = await knowledge.stores.attach(
            tenant,
            vector_store_id,
            attachments,
            datetime.now(UTC),
            knowledge.settings.max_files_per_vector_store,
            batch_id,
        )
    except LimitReached as limit:
        raise HTTPException(400, str(limit)) from None
    except FileGone as gone:
        raise HTTPException(404, f"File with id '{gone}' not found.") from None
    if attached is None:
        raise HTTPException(404, f"Vector store with id '{vector_store_id}' not found.")
    crash_point(AFTER_ATTACHMENT_ROW)  # the sweep (knowledge/ingestion_sweep.py) starts what a crash here leaves
    await knowledge.ingestion.start(vector_store_id, [(file.file_id, file.ingestion_id) for file in attached])
    return attached


def file_quota(knowledge: Knowledge) -> FileQuota:
    settings = knowledge.settings
    return FileQuota(settings.max_files_per_tenant, settings.max_file_bytes_per_tenant)
