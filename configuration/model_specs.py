"""The `[models."<id>"]` and `[shields."<id>"]` entries of the settings: how to reach a model an agent names, what
its tokens cost, and what a shield checks."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

BUILTIN_EMBEDDING_MODEL_ID = "wordllama/l2_supercat-256"
"""The embedding model that ships in the `wordllama` wheel: works offline, always offered."""


class ModelPricing(BaseModel):
    """What a model's tokens cost, in US dollars per million tokens: what an Agents API session's `spend_control`
    counts against its limit."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    input: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    """USD per million input (prompt) tokens."""
    output: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    """USD per million output (completion) tokens."""

    def cost_microcents(self, input_tokens: int, output_tokens: int) -> int:
        """The cost of one model call in millionths of a US cent, whole (USD per million tokens times tokens is
        that many micro-cents times 100): sums of them stay exact where cents would round each call."""
        return round((input_tokens * self.input + output_tokens * self.output) * 100)


class ModelSpec(BaseModel):
    """How to reach one model id that agents may name."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    provider: Literal["openai", "offline"]
    """`openai`: any OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp, OpenAI, …): chat completions, or
    embeddings for an embedding model."""
    model_type: Literal["llm", "embedding"] = "llm"
    """`embedding`: an embeddings model (`/v1/embeddings`, vector stores) instead of a chat model."""
    embedding_dimension: int | None = Field(default=None, gt=0)
    """For an embedding model: the length of its vectors (its vector stores' index is made for it)."""
    base_url: str | None = None
    """The OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 for Ollama."""
    api_key_env: str | None = None
    """Name of the environment variable (read by the worker) that holds the API key."""
    provider_model: str | None = None
    """The model name the provider knows, when it differs from the id agents use."""
    timeout_seconds: float = Field(default=120.0, gt=0)
    """The model client's timeout in seconds (to connect, and between bytes of the reply); Temporal retries a call
    that times out."""
    pricing: ModelPricing | None = None
    """`{"input": USD, "output": USD}` per million tokens, as the provider reports them used; unset: free (a local
    model). Agents API sessions with a `spend_control` limit pause when their calls' cost reaches it."""

    @model_validator(mode="after")
    def _openai_needs_an_endpoint(self) -> ModelSpec:
        if self.provider == "openai" and not self.base_url:
            raise ValueError("needs a base_url (the OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1)")
        if self.model_type == "embedding" and (self.provider != "openai" or not self.embedding_dimension):
            raise ValueError(
                "an embedding model needs provider 'openai' and its embedding_dimension (the built-in "
                f"{BUILTIN_EMBEDDING_MODEL_ID} needs no entry)"
            )
        return self


class ShieldSpec(BaseModel):
    """A shield agents may name in input_shields / output_shields (see providers/shields.py)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    provider: Literal["regex", "llama_guard"]
    """`regex`: patterns over new text; `llama_guard`: ask a Llama-Guard-style model (`safe` / `unsafe`)."""
    patterns: list[str] = Field(default_factory=list)
    """For `regex`: a violation when any matches."""
    model: str | None = None
    """For `llama_guard`: the configured model id of the guard model."""
    violation_message: str = "I can't answer that. Can I help with something else?"
    """The turn's answer when the shield finds a violation (the turn ends with it)."""
