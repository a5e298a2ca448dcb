"""Webhooks on a PostgreSQL store: the outbox written in the turn's transaction, retries, the log."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from openai import OpenAI

from tests.support.databases import postgres_database
from tests.support.scripted_model import text
from tests.support.stack import SCRIPTED_MODEL, Stack
from tests.support.webhook_receiver import Receiver
from tests.webhooks.test_webhooks_delivery import wait_for_log


@pytest.fixture(scope="module")
def postgres_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with postgres_database() as url:
        running = Stack(Path(tmp_path_factory.mktemp("pg-webhooks")), store_url=url)
        try:
            yield running
        finally:
            running.close()


def test_a_completed_response_is_delivered_after_a_failure_on_postgresql(postgres_stack: Stack) -> None:
    assert postgres_stack.settings.store_url.startswith("postgresql+asyncpg://")
    receiver = Receiver().start()
    receiver.answer(503)
    client = OpenAI(base_url=f"{postgres_stack.base_url}/v1", api_key="unused", max_retries=0)
    try:
        endpoint = client.webhooks.create(name="pg", url=receiver.url, event_types=["response.completed"])
        postgres_stack.model.script(text("done"))
        created = client.responses.create(model=SCRIPTED_MODEL, input="go", background=True)

        first, second = receiver.wait_for(2)

        assert [delivery.status for delivery in (first, second)] == [503, 200]
        assert second.event(endpoint.signing_secret).data.id == created.id
        log = wait_for_log(httpx.Client(base_url=postgres_stack.base_url, timeout=60), endpoint.id, "delivered")
        assert [attempt["status_code"] for attempt in log["attempts"]] == [503, 200]
        client.webhooks.delete(endpoint.id)
    finally:
        receiver.stop()
