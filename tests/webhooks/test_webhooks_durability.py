"""A webhook is as durable as the response that caused it: with its receiver down, a background response
completes; the whole stack is SIGKILLed and started again; when the receiver comes back, the event arrives
and is accepted exactly once. Also when the worker died between recording the event and starting its
delivery: the API's sweep of the outbox starts it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.fernet import Fernet
from openai import OpenAI
from temporalio.service import RPCError, RPCStatusCode

from hosting.fault_points import AFTER_SESSION_ROW, AFTER_TURN_END
from tests.support.processes import EVENT_SECONDS, ProcessStack, wait_until
from tests.support.scripted_model import text
from tests.support.stack import SCRIPTED_MODEL, free_port
from tests.support.webhook_receiver import Receiver
from workflows.webhook_delivery import delivery_workflow_id

pytestmark = pytest.mark.processes


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessStack]:
    data_dir = Path(tmp_path_factory.mktemp("webhooks"))
    settings = {
        "DA_CREDENTIALS_KEY": Fernet.generate_key().decode(),
        "DA_WEBHOOK_RETRY_DELAYS": ",".join(["1"] * 120),
        "DA_WEBHOOK_SWEEP_INTERVAL": "2",
    }
    running = ProcessStack(data_dir, extra_env=settings, log_dir=data_dir)
    yield running
    running.close()


@pytest.fixture
def client(stack: ProcessStack) -> Iterator[OpenAI]:
    stack.model.script()
    with OpenAI(base_url=f"{stack.url}/v1", api_key="unused", max_retries=2, timeout=60) as made:
        yield made


def restart_everything(stack: ProcessStack) -> None:
    """SIGKILL the API, the worker (if it still runs) and the dev server; start them again."""
    stack.kill(stack.api)
    if stack.worker is not None and stack.worker.poll() is None:
        stack.kill(stack.worker)
    stack.kill(stack.temporal)
    time.sleep(1)
    stack.start_temporal()
    stack.start_worker()
    stack.start_api()


def deliveries(stack: ProcessStack, endpoint_id: str) -> list[dict[str, Any]]:
    response = httpx.get(f"{stack.url}/v1/webhook_endpoints/{endpoint_id}/deliveries", timeout=30)
    response.raise_for_status()
    return response.json()["data"]


def delivery_started(stack: ProcessStack, endpoint_id: str, event_id: str) -> bool:
    """Whether Temporal has a workflow for the delivery's first round."""

    async def look() -> bool:
        handle = (await stack.temporal_client()).get_workflow_handle(delivery_workflow_id(endpoint_id, event_id, 0))
        try:
            await handle.describe()
        except RPCError as missing:
            assert missing.status == RPCStatusCode.NOT_FOUND
            return False
        return True

    return asyncio.run(look())


def accepted_once(receiver: Receiver, secret: str, response_id: str) -> None:
    """The receiver accepts the event once (deduplicating on webhook-id, as docs/webhooks.md says to), and
    nothing else arrives for it."""
    wait_until(lambda: receiver.deliveries, "a delivery", EVENT_SECONDS)
    time.sleep(4)  # any duplicate would arrive within the 1 s schedule
    events = [delivery.event(secret) for delivery in receiver.deliveries]
    assert [(event.type, event.data.id) for event in events] == [("response.completed", response_id)]


def test_an_event_waits_out_a_dead_receiver_and_a_killed_stack(stack: ProcessStack, client: OpenAI) -> None:
    receiver = Receiver(free_port())  # not listening yet: every attempt is refused
    endpoint = client.webhooks.create(name="down", url=receiver.url, event_types=["response.completed"])
    stack.model.script(text("finished while nobody listened"))

    created = client.responses.create(model=SCRIPTED_MODEL, input="go", background=True)

    wait_until(
        lambda: client.responses.retrieve(created.id).status == "completed", "the response's completion", EVENT_SECONDS
    )
    failed = wait_until(
        lambda: [d for d in deliveries(stack, endpoint.id) if d["attempts"]], "a failed attempt", EVENT_SECONDS
    )
    assert failed[0]["status"] == "pending" and failed[0]["attempts"][0]["status_code"] is None

    restart_everything(stack)
    receiver.start()
    try:
        accepted_once(receiver, endpoint.signing_secret, created.id)
        log = wait_until(
            lambda: [d for d in deliveries(stack, endpoint.id) if d["status"] == "delivered"],
            "delivered",
            EVENT_SECONDS,
        )
        codes = [attempt["status_code"] for attempt in log[0]["attempts"]]
        assert codes[-1] == 200 and codes.count(200) == 1 and None in codes
    finally:
        receiver.stop()
        client.webhooks.delete(endpoint.id)


def test_an_attempt_cut_by_a_killed_worker_is_tried_again_within_seconds(stack: ProcessStack, client: OpenAI) -> None:
    """The worker dies while the receiver has the request: the server notices by the attempt's missing
    heartbeats (seconds), not by its start-to-close timeout (minutes), and another worker sends again."""
    receiver = Receiver(free_port())
    receiver.stall()
    receiver.start()
    endpoint = client.webhooks.create(name="cut", url=receiver.url, event_types=["response.completed"])
    stack.model.script(text("its first attempt was cut"))
    try:
        created = client.responses.create(model=SCRIPTED_MODEL, input="go", background=True)
        wait_until(lambda: receiver.stalled, "an attempt in flight", EVENT_SECONDS)
        stack.kill(stack.worker)
        stack.start_worker()
        receiver.stall(False)
        cut_at = time.monotonic()
        (delivery,) = receiver.wait_for(1, seconds=45)  # the heartbeat timeout is 10 s; start-to-close is 6 min
        assert delivery.event(endpoint.signing_secret).data.id == created.id
        assert time.monotonic() - cut_at < 45
    finally:
        receiver.stop()
        client.webhooks.delete(endpoint.id)


def test_a_delivery_whose_start_a_crash_lost_is_started_by_the_sweep(stack: ProcessStack, client: OpenAI) -> None:
    receiver = Receiver(free_port())
    endpoint = client.webhooks.create(name="lost", url=receiver.url, event_types=["response.completed"])
    stack.model.script(text("written, then the worker died"))
    stack.kill(stack.worker)
    stack.start_worker(DA_TEST_FAULT=AFTER_TURN_END)  # dies after writing the turn's end, before anything else

    created = client.responses.create(model=SCRIPTED_MODEL, input="go", background=True)

    assert stack.worker is not None and stack.worker.wait(timeout=EVENT_SECONDS) != 0
    (recorded,) = deliveries(stack, endpoint.id)
    assert recorded["status"] == "pending" and not delivery_started(stack, endpoint.id, recorded["event_id"])
    restart_everything(stack)
    receiver.start()
    try:
        accepted_once(receiver, endpoint.signing_secret, created.id)
        assert client.responses.retrieve(created.id).status == "completed"
    finally:
        receiver.stop()
        client.webhooks.delete(endpoint.id)


def test_a_delivery_whose_workflow_was_terminated_fails_and_can_be_redelivered(
    stack: ProcessStack, client: OpenAI
) -> None:
    receiver = Receiver(free_port())  # not listening yet: the delivery keeps retrying, pending
    endpoint = client.webhooks.create(name="stopped", url=receiver.url, event_types=["response.completed"])
    stack.model.script(text("its delivery was terminated"))
    created = client.responses.create(model=SCRIPTED_MODEL, input="go", background=True)
    (pending,) = wait_until(
        lambda: [d for d in deliveries(stack, endpoint.id) if d["attempts"]], "a failed attempt", EVENT_SECONDS
    )
    assert pending["status"] == "pending"

    async def terminate() -> None:
        workflow_id = delivery_workflow_id(endpoint.id, pending["event_id"], 0)
        await (await stack.temporal_client()).get_workflow_handle(workflow_id).terminate("an operator stopped it")

    asyncio.run(terminate())
    (failed,) = wait_until(
        lambda: [d for d in deliveries(stack, endpoint.id) if d["status"] == "failed"], "failed", EVENT_SECONDS
    )
    assert "terminated" in failed["attempts"][-1]["error"]
    receiver.start()
    try:
        redelivered = httpx.post(
            f"{stack.url}/v1/webhook_endpoints/{endpoint.id}/deliveries/{failed['id']}/redeliver", timeout=30
        )
        assert redelivered.status_code == 200, redelivered.text
        accepted_once(receiver, endpoint.signing_secret, created.id)
    finally:
        receiver.stop()
        client.webhooks.delete(endpoint.id)


def test_a_session_created_just_before_a_crash_still_announces_itself(stack: ProcessStack) -> None:
    receiver = Receiver(free_port()).start()
    beta = OpenAI(base_url=f"{stack.url}/v1", api_key="unused", max_retries=0, timeout=60)
    endpoint = beta.webhooks.create(name="sessions", url=receiver.url, event_types=["agent.session.created"])
    stack.kill(stack.api)
    stack.start_api(DA_TEST_FAULT=AFTER_SESSION_ROW)  # dies right after writing the session's row
    try:
        with pytest.raises(httpx.TransportError):
            httpx.post(
                f"{stack.url}/v1/agents/sessions",
                headers={"OpenAI-Beta": "agents=v1"},
                json={"environment": {"type": "none"}, "agent": {"model": SCRIPTED_MODEL}, "input": "hello"},
                timeout=30,
            )
        assert stack.api is not None and stack.api.wait(timeout=EVENT_SECONDS) != 0
        stack.start_api()
        (delivery,) = receiver.wait_for(1)
        event = delivery.event(endpoint.signing_secret)
        assert event.type == "agent.session.created"
        assert beta.beta.agents.sessions.retrieve(event.data.id).id == event.data.id
    finally:
        receiver.stop()
        beta.webhooks.delete(endpoint.id)
