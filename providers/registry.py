"""From a model id an agent names to the chat model that serves it."""

from __future__ import annotations

import contextlib
import os

from configuration.model_specs import ModelPricing, ModelSpec
from configuration.settings import Settings
from providers.base import ChatModel, ProviderRejected
from providers.offline import OfflineModel
from providers.openai_chat import OpenAIChatModel


class ModelRegistry:
    """Builds one client per model id, lazily, and reuses it (connection pools are per client)."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._models: dict[str, tuple[ChatModel, str]] = {}

    def resolve(self, model_id: str) -> tuple[ChatModel, str]:
        """The chat model and the name to send it, or ProviderRejected naming the known ids."""
        if model_id not in self._models:
            spec = self._settings.model(model_id)
            if spec is None:
                known = ", ".join(sorted(self._settings.models))
                raise ProviderRejected(f"Model {model_id!r} is not configured; configured models: {known}")
            self._models[model_id] = (_build(spec), spec.provider_model or model_id)
        return self._models[model_id]

    def warm(self) -> None:
        """Build every configured chat model's client now, as the worker starts. Built by an inference instead,
        the SDK's import and client would come before the activity's first heartbeat: on a loaded machine
        that can outlast the heartbeat timeout, and the retried attempt calls the model a second time."""
        for model_id in self._settings.models:
            with contextlib.suppress(ProviderRejected):  # an embedding model, or a missing key: told when used
                self.resolve(model_id)

    def pricing(self, model_id: str) -> ModelPricing:
        """What the model's tokens cost (free unless its spec says otherwise)."""
        spec = self._settings.model(model_id)
        return spec.pricing if spec is not None and spec.pricing is not None else ModelPricing()


def _build(spec: ModelSpec) -> ChatModel:
    if spec.provider == "offline":
        return OfflineModel()
    api_key = os.environ.get(spec.api_key_env) if spec.api_key_env else None
    if spec.api_key_env and not api_key:
        raise ProviderRejected(f"The worker's environment has no {spec.api_key_env}, which holds this model's API key")
    assert spec.base_url is not None
    return OpenAIChatModel(spec.base_url, api_key, spec.timeout_seconds)
