"""The receiver docs/webhooks.md shows, run as written: it accepts this server's signed deliveries and
refuses a forged one."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from openai import OpenAI

from tests.support.scripted_model import ThreadedServer
from tests.support.stack import Stack, free_port

TURN_AWAITING_INPUT: Any = "turn.awaiting_input"
"""Typed `Any`: the SDK's parameter types list OpenAI's event types, not this server's turn events."""
DOC = Path(__file__).resolve().parents[2] / "docs" / "webhooks.md"


def receiver_app() -> Any:
    section = DOC.read_text().split("## Receive and verify (FastAPI)", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(compile(code, str(DOC), "exec"), namespace)  # our own documentation's example, run as written
    return namespace["app"]


@pytest.fixture
def client(stack: Stack) -> Iterator[OpenAI]:
    with OpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0) as made:
        yield made


def test_the_documented_receiver_verifies_deliveries(client: OpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()
    url = f"http://localhost:{port}/durable-agents"
    endpoint = client.webhooks.create(name="docs", url=url, event_types=[TURN_AWAITING_INPUT])
    monkeypatch.setitem(os.environ, "DURABLE_AGENTS_WEBHOOK_SECRET", endpoint.signing_secret)
    server = ThreadedServer(receiver_app(), port).start()
    try:
        assert client.webhooks.test(endpoint.id, event_type=TURN_AWAITING_INPUT).status_code == 200
        forged = httpx.post(
            f"{server.url}/durable-agents",
            content=b'{"id": "evt_x", "type": "turn.awaiting_input"}',
            headers={"webhook-id": "evt_x", "webhook-timestamp": "1", "webhook-signature": "v1,Zm9yZ2Vk"},
            timeout=60,
        )
        assert forged.status_code == 400
    finally:
        server.stop()
        client.webhooks.delete(endpoint.id)
