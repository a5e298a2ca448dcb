from __future__ import annotations

from collections.abc import Iterator

import pytest
from openai import OpenAI

from tests.support.stack import Stack


@pytest.fixture
def client(stack: Stack) -> Iterator[OpenAI]:
    """The unmodified openai SDK against the stack; it sends `OpenAI-Beta: agents=v1` itself."""
    with OpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0, timeout=60) as made:
        yield made
