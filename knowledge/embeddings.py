"""Embedding models: the built-in `wordllama` one (offline) and any OpenAI-compatible embeddings endpoint.

The built-in model is WordLlama's `l2_supercat` at 256 dimensions: a static token-embedding table averaged
over the text, whose weights and tokenizer ship in the wheel. WordLlama's default lookup looks for the
tokenizer in the wrong folder of the package and then downloads it; loading with `cache_dir` at the installed
package finds both files there, and `disable_download` makes a missing file an error, never a network call.

Provider keys are read from the environment variable a model names, by the process that calls the endpoint
(the worker while ingesting, the API for a query or `/v1/embeddings`); they never enter a workflow's input.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from configuration.model_specs import BUILTIN_EMBEDDING_MODEL_ID, ModelSpec
from configuration.settings import Settings
from knowledge.chunking import token_ids

BUILTIN_DIMENSION = 256
_OPENAI_BATCH = 512
"""Inputs per request to an OpenAI-compatible endpoint (OpenAI takes up to 2048)."""


class EmbeddingUnavailable(Exception):
    """The embedding model could not be reached or refused the input; the message says which and why."""


class UnknownEmbeddingModel(LookupError):
    pass


@dataclass(frozen=True)
class Embedded:
    vectors: np.ndarray
    """One row per input, float32, unit length (cosine distance is then a dot product)."""
    tokens: int


class EmbeddingModel(Protocol):
    model_id: str
    dimension: int

    async def embed(self, texts: list[str]) -> Embedded: ...


@runtime_checkable
class InProcessEmbeddingModel(EmbeddingModel, Protocol):
    """A model that embeds in this process without waiting on anything: a caller already on a worker thread
    (a search's read, knowledge/search.py) embeds there instead of crossing to another thread and back."""

    def embed_now(self, texts: list[str]) -> Embedded: ...


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Each row scaled to length 1; an all-zero row (a text of no known token) stays zero instead of NaN."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms == 0, 1, norms)).astype(np.float32)


@cache
def _wordllama() -> Any:
    import wordllama

    return wordllama.WordLlama.load(
        config="l2_supercat",
        dim=BUILTIN_DIMENSION,
        cache_dir=Path(wordllama.__file__).parent,
        disable_download=True,
    )


class WordLlamaEmbeddings:
    """The built-in model, in this process; its work runs on a thread so the event loop keeps serving.

    A text's vector is the mean of its tokens' rows of the model's table, as `WordLlama.embed` computes it, but
    each text is tokenized once (the library tokenized every batch twice to count tokens, padded it to its
    longest text and multiplied the padding by zero), and ingestion hands over the token ids its chunker cut
    (`embed_token_ids`), so a document is tokenized once in all.
    """

    model_id = BUILTIN_EMBEDDING_MODEL_ID
    dimension = BUILTIN_DIMENSION

    def embed_now(self, texts: list[str]) -> Embedded:
        if not texts:
            return Embedded(np.zeros((0, self.dimension), np.float32), 0)
        encoded = token_ids(texts)
        return self.embed_token_ids(encoded)

    def embed_token_ids(self, texts: list[np.ndarray]) -> Embedded:
        """The vectors of texts already tokenized by the built-in tokenizer (knowledge/chunking.py)."""
        table: np.ndarray = _wordllama().embedding
        vectors = np.zeros((len(texts), table.shape[1]), np.float32)
        tokens = 0
        for row, ids in enumerate(texts):
            # Text by text: one text's rows stay in the CPU's cache (gathering a whole batch's rows first was
            # several times slower), and a text of no tokens stays a zero row.
            if len(ids):
                vectors[row] = table[np.clip(ids, 0, table.shape[0] - 1)].sum(axis=0)
                tokens += len(ids)
        return Embedded(unit_rows(vectors), tokens)

    async def embed(self, texts: list[str]) -> Embedded:
        return await asyncio.to_thread(self.embed_now, texts)


class OpenAIEmbeddings:
    """An OpenAI-compatible `/embeddings` endpoint (OpenAI, vLLM, Ollama, llama.cpp …)."""

    def __init__(self, model_id: str, spec: ModelSpec) -> None:
        assert spec.base_url is not None and spec.embedding_dimension is not None
        self.model_id = model_id
        self.dimension = spec.embedding_dimension
        self._name = spec.provider_model or model_id
        self._api_key = os.environ.get(spec.api_key_env) if spec.api_key_env else None
        self._missing_key = spec.api_key_env if spec.api_key_env and not self._api_key else None
        # The SDK when an endpoint model is first built: importing it costs a process near half a second
        # of CPU, which a deployment on the built-in model never needs to pay.
        import openai

        # Retries of ingestion are Temporal's; a query's caller retries its own request.
        self._client = openai.AsyncOpenAI(
            base_url=spec.base_url, api_key=self._api_key or "not-needed", timeout=spec.timeout_seconds, max_retries=0
        )

    def _redacted(self, text: str) -> str:
        return text.replace(self._api_key, "[redacted]") if self._api_key else text

    async def embed(self, texts: list[str]) -> Embedded:
        if self._missing_key:
            raise EmbeddingUnavailable(f"This process's environment has no {self._missing_key}, which holds the key")
        import openai  # imported already by __init__

        rows: list[list[float]] = []
        tokens = 0
        for start in range(0, len(texts), _OPENAI_BATCH):
            batch = texts[start : start + _OPENAI_BATCH]
            try:
                reply = await self._client.embeddings.create(model=self._name, input=batch, encoding_format="float")
            except openai.APIError as exc:
                raise EmbeddingUnavailable(
                    f"The embedding endpoint of {self.model_id!r} failed: {self._redacted(str(exc))}"
                ) from None
            if len(reply.data) != len(batch):
                raise EmbeddingUnavailable(f"{self.model_id!r} answered {len(reply.data)} vectors for {len(batch)}")
            rows.extend(item.embedding for item in sorted(reply.data, key=lambda item: item.index))
            tokens += reply.usage.prompt_tokens if reply.usage else 0
        vectors = np.asarray(rows, dtype=np.float32).reshape(len(texts), -1)
        if vectors.shape[1] != self.dimension:
            raise EmbeddingUnavailable(
                f"{self.model_id!r} answered vectors of {vectors.shape[1]} dimensions; its configured "
                f"embedding_dimension is {self.dimension}"
            )
        return Embedded(unit_rows(vectors), tokens)


@dataclass(frozen=True)
class EmbeddingModelInfo:
    model_id: str
    dimension: int
    provider: str
    provider_model: str


class EmbeddingCatalog:
    """Every embedding model this deployment offers, each built once per process on first use."""

    def __init__(self, settings: Settings) -> None:
        self.default_model = settings.default_embedding_model
        self._specs = {model_id: spec for model_id, spec in settings.models.items() if spec.model_type == "embedding"}
        self._built: dict[str, EmbeddingModel] = {}

    def models(self) -> list[EmbeddingModelInfo]:
        builtin = EmbeddingModelInfo(BUILTIN_EMBEDDING_MODEL_ID, BUILTIN_DIMENSION, "wordllama", "l2_supercat_256")
        configured = [
            EmbeddingModelInfo(model_id, spec.embedding_dimension or 0, spec.provider, spec.provider_model or model_id)
            for model_id, spec in self._specs.items()
        ]
        return [builtin, *configured]

    def info(self, model_id: str) -> EmbeddingModelInfo:
        for info in self.models():
            if info.model_id == model_id:
                return info
        known = ", ".join(info.model_id for info in self.models())
        raise UnknownEmbeddingModel(f"Embedding model {model_id!r} is not configured; embedding models: {known}")

    def get(self, model_id: str) -> EmbeddingModel:
        if model_id not in self._built:
            self.info(model_id)  # raises for an unknown id
            spec = self._specs.get(model_id)
            self._built[model_id] = WordLlamaEmbeddings() if spec is None else OpenAIEmbeddings(model_id, spec)
        return self._built[model_id]
