"""What the knowledge routes of both dialects share (models, embeddings, files, vector stores), made once per
process by the app's lifespan and injected like the turn runtime (api/runtime.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Request

from api.responses.errors import OpenAIError
from knowledge.embeddings import EmbeddingCatalog, EmbeddingModel, UnknownEmbeddingModel
from settings import Settings


@dataclass(frozen=True)
class Knowledge:
    settings: Settings
    embeddings: EmbeddingCatalog


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
