"""A worker builds its chat models' clients as it starts (worker.py: `ModelRegistry.warm`), not in its first
inference. Built there, the SDK's import and the client come before the activity's first heartbeat, which on a
loaded machine they can outlast: Temporal then cancels the attempt and retries it, and the model is called twice.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from configuration.loading import load_settings
from configuration.model_specs import ModelSpec
from providers import registry
from providers.base import ChatModel, ProviderRejected
from providers.registry import ModelRegistry


def test_warming_builds_each_chat_model_once_and_leaves_a_missing_key_to_its_first_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[str | None] = []
    build = registry._build

    def counted(spec: ModelSpec) -> ChatModel:
        built.append(spec.base_url)
        return build(spec)

    monkeypatch.setattr(registry, "_build", counted)
    monkeypatch.setenv("DA_TEST_WARM_KEY", "a-key")
    monkeypatch.delenv("DA_TEST_ABSENT_KEY", raising=False)
    remote = {"provider": "openai", "base_url": "http://127.0.0.1:9/v1", "api_key_env": "DA_TEST_WARM_KEY"}
    keyless = {"provider": "openai", "base_url": "http://127.0.0.1:8/v1", "api_key_env": "DA_TEST_ABSENT_KEY"}
    settings = load_settings(
        {"DA_DATA_DIR": str(tmp_path), "DA_MODELS": json.dumps({"remote": remote, "keyless": keyless})}
    )
    models = ModelRegistry(settings)

    models.warm()
    assert built == ["http://127.0.0.1:9/v1", "http://127.0.0.1:8/v1"]  # the keyless one was tried, and refused
    warmed, name = models.resolve("remote")
    assert name == "remote" and models.resolve("remote")[0] is warmed
    assert built == ["http://127.0.0.1:9/v1", "http://127.0.0.1:8/v1"]  # an inference builds nothing more
    with pytest.raises(ProviderRejected, match="DA_TEST_ABSENT_KEY"):
        models.resolve("keyless")
