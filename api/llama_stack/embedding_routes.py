"""`POST /v1/inference/embeddings`: the llama-stack 0.2.x embeddings route."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, ConfigDict, Field

from api.knowledge import KnowledgeDep, embedding_model
from configuration.model_specs import BUILTIN_EMBEDDING_MODEL_ID
from knowledge.embeddings import BUILTIN_DIMENSION, EmbeddingUnavailable, unit_rows

router = APIRouter(tags=["Inference"])

MAX_CONTENTS = 2048


class EmbeddingsRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model_id: str
    contents: list[str] | list[dict[str, Any]]
    text_truncation: Literal["none", "start", "end"] | None = None
    output_dimension: int | None = Field(default=None, gt=0)
    task_type: Literal["query", "document"] | None = None


class EmbeddingsResponse(BaseModel):
    embeddings: list[list[float]]


def _text(item: Any, index: int) -> str:
    if isinstance(item, str):
        return item
    if item.get("type") == "text" and isinstance(text := item.get("text"), str):
        return text
    raise HTTPException(400, f"contents[{index}] is not text; the embedding models here embed text only")


@router.post("/inference/embeddings", response_model=EmbeddingsResponse)
async def embeddings(body: EmbeddingsRequest, knowledge: KnowledgeDep) -> EmbeddingsResponse:
    if not body.contents or len(body.contents) > MAX_CONTENTS:
        raise HTTPException(400, f"contents must have 1 to {MAX_CONTENTS} items, got {len(body.contents)}")
    texts = [_text(item, index) for index, item in enumerate(body.contents)]
    model = embedding_model(knowledge, body.model_id)
    wanted = body.output_dimension
    if (
        wanted is not None
        and wanted != model.dimension
        and (model.model_id != BUILTIN_EMBEDDING_MODEL_ID or wanted > BUILTIN_DIMENSION)
    ):
        raise HTTPException(400, f"{body.model_id!r} makes vectors of {model.dimension} dimensions, not {wanted}")
    try:
        embedded = await model.embed(texts)
    except EmbeddingUnavailable as exc:
        raise HTTPException(502, str(exc)) from None
    vectors = embedded.vectors if wanted is None else unit_rows(embedded.vectors[:, :wanted])
    return EmbeddingsResponse(embeddings=vectors.tolist())
