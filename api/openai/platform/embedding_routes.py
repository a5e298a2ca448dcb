"""`POST /v1/embeddings`: the OpenAI embeddings route, on any embedding model this deployment offers."""

from __future__ import annotations

import base64
from typing import Any, Literal

import numpy as np
from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from api.knowledge import KnowledgeDep, embedding_model
from api.openai.errors import ERROR_RESPONSES, OpenAIError, invalid
from configuration.model_specs import BUILTIN_EMBEDDING_MODEL_ID
from knowledge.embeddings import BUILTIN_DIMENSION, EmbeddingUnavailable, unit_rows

router = APIRouter(tags=["Embeddings"], responses=ERROR_RESPONSES)

MAX_INPUTS = 2048
MAX_INPUT_CHARS = 200_000
"""Per input: far more than any embedding model's context, and small enough that no request is huge."""


class EmbeddingRequest(BaseModel):
    model_config = ConfigDict(extra="allow")

    input: str | list[str] | list[int] | list[list[int]]
    model: str
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(default=None, gt=0)
    user: str | None = None


class Embedding(BaseModel):
    object: Literal["embedding"] = "embedding"
    index: int
    embedding: list[float] | str


class Usage(BaseModel):
    prompt_tokens: int
    total_tokens: int


class EmbeddingList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Embedding]
    model: str
    usage: Usage


def _texts(given: str | list[str] | list[int] | list[list[int]]) -> list[str]:
    texts: list[Any] = [given] if isinstance(given, str) else list(given)
    if not texts:
        raise invalid("'input' is empty: give a string or a list of strings.", "input")
    if not all(isinstance(text, str) for text in texts):
        raise invalid("Token arrays are not accepted here: send the text itself.", "input", "unsupported_input")
    if len(texts) > MAX_INPUTS:
        raise invalid(f"'input' has {len(texts)} items; at most {MAX_INPUTS} per request.", "input")
    for index, text in enumerate(texts):
        if not text:
            raise invalid(f"input[{index}] is an empty string; every input must have text.", "input")
        if len(text) > MAX_INPUT_CHARS:
            raise invalid(f"input[{index}] has {len(text)} characters; at most {MAX_INPUT_CHARS}.", "input")
    return texts


@router.post("/embeddings", response_model=EmbeddingList)
async def create_embeddings(body: EmbeddingRequest, knowledge: KnowledgeDep) -> EmbeddingList:
    texts = _texts(body.input)
    model = embedding_model(knowledge, body.model)
    # The built-in model was trained so that a prefix of its vector is itself an embedding (Matryoshka).
    truncatable = model.model_id == BUILTIN_EMBEDDING_MODEL_ID
    wanted = body.dimensions
    if wanted is not None and wanted != model.dimension and (not truncatable or wanted > BUILTIN_DIMENSION):
        limit = f" (at most {BUILTIN_DIMENSION})" if truncatable else ""
        raise invalid(
            f"Model {body.model!r} makes vectors of {model.dimension} dimensions and cannot make {wanted}{limit}.",
            "dimensions",
        )
    try:
        embedded = await model.embed(texts)
    except EmbeddingUnavailable as exc:
        raise OpenAIError(502, str(exc), "model", "embedding_model_unavailable") from None
    vectors = embedded.vectors
    if body.dimensions is not None and body.dimensions < vectors.shape[1]:
        vectors = unit_rows(vectors[:, : body.dimensions])
    data = [Embedding(index=index, embedding=_encoded(row, body.encoding_format)) for index, row in enumerate(vectors)]
    return EmbeddingList(
        data=data, model=body.model, usage=Usage(prompt_tokens=embedded.tokens, total_tokens=embedded.tokens)
    )


def _encoded(row: np.ndarray, encoding: str) -> list[float] | str:
    if encoding == "base64":
        return base64.b64encode(row.astype("<f4").tobytes()).decode()
    values: list[float] = row.tolist()
    return values
