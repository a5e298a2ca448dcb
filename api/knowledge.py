"""What the knowledge routes of both dialects share (models, embeddings, files, vector stores), made once per
process by the app's lifespan and injected like the turn runtime (api/runtime.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from temporalio.client import Client

from api.responses.errors import OpenAIError
from knowledge.blobs import BlobStore, blob_store
from knowledge.embeddings import EmbeddingCatalog, EmbeddingModel, UnknownEmbeddingModel
from knowledge.engines import vector_index
from knowledge.ingestion_starter import IngestionStarter
from settings import Settings
from store.database import Database
from store.files import FileStore
from store.vector_stores import VectorStores


@dataclass(frozen=True)
class Knowledge:
    settings: Settings
    embeddings: EmbeddingCatalog
    files: FileStore
    blobs: BlobStore
    stores: VectorStores
    ingestion: IngestionStarter


def knowledge_for(settings: Settings, database: Database, client: Client) -> Knowledge:
    return Knowledge(
        settings,
        EmbeddingCatalog(settings),
        FileStore(database),
        blob_store(settings.store_url, database, settings.blob_dir),
        VectorStores(database, vector_index(settings.store_url)),
        IngestionStarter(client, settings.task_queue),
    )


async def get_knowledge(request: Request) -> Knowledge:
    return request.app.state.knowledge


KnowledgeDep = Annotated[Knowledge, Depends(get_knowledge)]


def embedding_model(knowledge: Knowledge, model_id: str, param: str | None) -> EmbeddingModel:
    """The embedding model of that id, or a 400 (OpenAI's shape when `param` names the field) listing them."""
    try:
        return knowledge.embeddings.get(model_id)
    except UnknownEmbeddingModel as exc:
        if param is None:
            raise HTTPException(400, str(exc)) from None
        raise OpenAIError(400, str(exc), param, "model_not_found") from None
