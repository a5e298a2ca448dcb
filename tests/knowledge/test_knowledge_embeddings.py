"""Models and embeddings through the unmodified openai SDK and llama-stack-client 0.2.12."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import httpx
import numpy as np
import openai
import pytest
from llama_stack_client import LlamaStackClient

from configuration.model_specs import BUILTIN_EMBEDDING_MODEL_ID
from tests.support.stack import SCRIPTED_MODEL, Stack


@pytest.fixture
def oai(stack: Stack) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0)


def test_the_builtin_model_loads_from_its_wheel_without_a_network_attempt() -> None:
    probe = textwrap.dedent(
        """
        import socket
        def refuse(*args, **kwargs):
            raise SystemExit(f"network attempt: {args[1:]}")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        from knowledge.embeddings import WordLlamaEmbeddings
        print(WordLlamaEmbeddings().embed_now(["offline"]).vectors.shape)
        """
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr + done.stdout
    assert done.stdout.strip() == "(1, 256)"


def test_openai_lists_chat_and_embedding_models(oai: openai.OpenAI) -> None:
    models = {model.id: model for model in oai.models.list()}
    assert SCRIPTED_MODEL in models and BUILTIN_EMBEDDING_MODEL_ID in models
    assert models[BUILTIN_EMBEDDING_MODEL_ID].object == "model"
    assert oai.models.retrieve(BUILTIN_EMBEDDING_MODEL_ID).owned_by == "wordllama"
    with pytest.raises(openai.NotFoundError):
        oai.models.retrieve("no-such-model")


def test_llama_stack_lists_models_with_their_type_and_dimension(llama: LlamaStackClient) -> None:
    models = {model.identifier: model for model in llama.models.list()}
    assert models[SCRIPTED_MODEL].api_model_type == "llm"
    embedding = models[BUILTIN_EMBEDDING_MODEL_ID]
    assert embedding.api_model_type == "embedding" and embedding.metadata["embedding_dimension"] == 256
    assert llama.models.retrieve(BUILTIN_EMBEDDING_MODEL_ID).provider_id == "wordllama"


def test_openai_embeddings_float_and_base64_agree_and_rank_by_meaning(oai: openai.OpenAI) -> None:
    texts = ["The cat sat on the mat.", "A kitten rested on the rug.", "Quarterly tax filing deadlines."]
    as_floats = oai.embeddings.create(model=BUILTIN_EMBEDDING_MODEL_ID, input=texts, encoding_format="float")
    as_base64 = oai.embeddings.create(model=BUILTIN_EMBEDDING_MODEL_ID, input=texts)  # the SDK asks base64
    vectors = np.array([item.embedding for item in as_floats.data])
    assert vectors.shape == (3, 256)
    assert np.allclose(vectors, [item.embedding for item in as_base64.data], atol=1e-6)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
    assert as_floats.usage.prompt_tokens > 0 and as_floats.model == BUILTIN_EMBEDDING_MODEL_ID

    short = oai.embeddings.create(model=BUILTIN_EMBEDDING_MODEL_ID, input="one text", dimensions=64)
    assert len(short.data[0].embedding) == 64


def test_openai_embeddings_bad_requests_are_400s_that_say_why(oai: openai.OpenAI) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"model": "nope", "input": "x"}, "not configured"),
        ({"model": BUILTIN_EMBEDDING_MODEL_ID, "input": ""}, "empty"),
        ({"model": BUILTIN_EMBEDDING_MODEL_ID, "input": [[1, 2, 3]]}, "Token arrays"),
        ({"model": BUILTIN_EMBEDDING_MODEL_ID, "input": "x", "dimensions": 1024}, "at most 256"),
        ({"model": SCRIPTED_MODEL, "input": "x"}, "not configured"),
    ]
    for arguments, message in cases:
        with pytest.raises(openai.BadRequestError) as refused:
            oai.embeddings.create(**arguments)
        assert message in refused.value.message, arguments


def test_llama_stack_inference_embeddings(llama: LlamaStackClient, http: httpx.Client) -> None:
    reply = llama.inference.embeddings(model_id=BUILTIN_EMBEDDING_MODEL_ID, contents=["hello world", "goodbye"])
    assert len(reply.embeddings) == 2 and len(reply.embeddings[0]) == 256
    refused = http.post("/v1/inference/embeddings", json={"model_id": "nope", "contents": ["x"]})
    assert refused.status_code == 400 and "not configured" in refused.json()["detail"]
