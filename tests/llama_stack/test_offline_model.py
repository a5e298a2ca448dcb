"""The offline echo model (no LLM) is there only when configured: by default when no models are."""

from __future__ import annotations

import json

import httpx
import pytest
from openai import AsyncOpenAI

from configuration.loading import load_settings
from configuration.settings import OFFLINE_MODEL_ID, SettingsError
from tests.support.stack import SCRIPTED_MODEL, Stack

MODELS = json.dumps({"real": {"provider": "openai", "base_url": "http://127.0.0.1:9/v1"}})


def test_on_without_models_off_with_them_and_switchable() -> None:
    assert OFFLINE_MODEL_ID in load_settings({}).models  # `make run` out of the box
    configured = load_settings({"DA_MODELS": MODELS})
    assert OFFLINE_MODEL_ID not in configured.models  # a deployment with models does not offer it
    assert configured.offline_model is False and load_settings({}).offline_model is True
    assert OFFLINE_MODEL_ID in load_settings({"DA_MODELS": MODELS, "DA_OFFLINE_MODEL": "true"}).models
    assert OFFLINE_MODEL_ID not in load_settings({"DA_OFFLINE_MODEL": "false"}).models
    with pytest.raises(SettingsError, match="DA_OFFLINE_MODEL must be true or false"):
        load_settings({"DA_OFFLINE_MODEL": "sometimes"})


def test_a_deployment_with_it_off_refuses_agents_that_name_it(stack: Stack) -> None:
    models = {name: spec for name, spec in stack.settings.models.items() if name != OFFLINE_MODEL_ID}
    with stack.other_api(stack.settings.model_copy(update=dict(models=models, offline_model=False))) as url:
        refused = httpx.post(
            f"{url}/v1/agents", json={"agent_config": {"model": OFFLINE_MODEL_ID, "instructions": "x"}}, timeout=30
        )
        assert refused.status_code == 400
        assert f"Model '{OFFLINE_MODEL_ID}' is not configured" in refused.json()["detail"]
        accepted = httpx.post(
            f"{url}/v1/agents", json={"agent_config": {"model": SCRIPTED_MODEL, "instructions": "x"}}, timeout=30
        )
        assert accepted.status_code == 200


async def test_it_reports_usage_words_for_tokens(stack: Stack) -> None:
    async with AsyncOpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0, timeout=60) as client:
        response = await client.responses.create(model=OFFLINE_MODEL_ID, input="hello there", instructions="Be kind.")
    assert response.output_text == "You said: hello there"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (4, 4, 8)
