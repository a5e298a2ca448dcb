"""bench/model_server.py's embeddings, which the peers benchmark points every system's vector stores at: the
`openai` SDK reads them in both encodings, and they are deterministic and closer for texts sharing words."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import openai
import pytest

from bench.model_server import build_app
from tests.support.scripted_model import ThreadedServer
from tests.support.stack import free_port


@pytest.fixture
def servers() -> Iterator[list[ThreadedServer]]:
    started = [ThreadedServer(build_app(), free_port()).start() for _ in range(2)]
    yield started
    for server in started:
        server.stop()


def _client(server: ThreadedServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)


def test_embeddings_are_unit_vectors_alike_in_both_encodings_and_across_servers(servers: list[ThreadedServer]) -> None:
    texts = ["harbour seal tide", "tide, seal and harbour", "compiler kernel scheduler"]
    packed = _client(servers[0]).embeddings.create(model="any", input=texts)  # the SDK asks for base64
    plain = _client(servers[1]).embeddings.create(model="any", input=texts, encoding_format="float")
    first = np.array([item.embedding for item in packed.data])
    second = np.array([item.embedding for item in plain.data])
    assert first.shape == (3, 256)
    assert np.allclose(first, second, atol=1e-6)
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert first[0] @ first[1] > 0.5 > abs(first[0] @ first[2])
    assert packed.usage.total_tokens == 10
