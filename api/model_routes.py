"""`GET /v1/models`: every chat and embedding model, in one shape both dialects' clients read.

The openai SDK reads `id`, `object`, `created` and `owned_by`; llama-stack-client 0.2.12 reads `identifier`,
`provider_id`, `provider_resource_id`, `type`, `model_type` and `metadata` (with `embedding_dimension` for an
embedding model). Each model carries both sets of fields, so one route serves both.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel

from api.knowledge import KnowledgeDep

router = APIRouter(tags=["Models"])

_STARTED = 1_700_000_000
"""`created` of every model: a fixed time, since models are configuration, not objects anyone created."""


class Model(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int = _STARTED
    owned_by: str
    identifier: str
    provider_id: str
    provider_resource_id: str
    type: Literal["model"] = "model"
    model_type: Literal["llm", "embedding"]
    metadata: dict[str, Any]


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Model]


def _model(model_id: str, provider: str, resource: str, model_type: Any, metadata: dict[str, Any]) -> Model:
    return Model(
        id=model_id,
        owned_by=provider,
        identifier=model_id,
        provider_id=provider,
        provider_resource_id=resource,
        model_type=model_type,
        metadata=metadata,
    )


def all_models(knowledge: Any) -> list[Model]:
    settings = knowledge.settings
    chat = [
        _model(model_id, spec.provider, spec.provider_model or model_id, "llm", {})
        for model_id, spec in settings.models.items()
        if spec.model_type == "llm"
    ]
    embedding = [
        _model(info.model_id, info.provider, info.provider_model, "embedding", {"embedding_dimension": info.dimension})
        for info in knowledge.embeddings.models()
    ]
    return chat + embedding


@router.get("/models", response_model=ModelList)
async def list_models(knowledge: KnowledgeDep) -> ModelList:
    return ModelList(data=all_models(knowledge))


@router.get("/models/{model_id:path}", response_model=Model)
async def get_model(model_id: str, knowledge: KnowledgeDep) -> Model:
    for model in all_models(knowledge):
        if model.id == model_id:
            return model
    known = ", ".join(model.id for model in all_models(knowledge))
    raise HTTPException(404, f"Model {model_id!r} is not configured; models: {known}")
