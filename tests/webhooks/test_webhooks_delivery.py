"""Webhooks as the unmodified `openai` SDK sees them: endpoints made with `client.webhooks`, deliveries
received by a real HTTP receiver and verified with `client.webhooks.unwrap`, for background responses
(completed, cancelled, paused on a function call), a llama-stack turn awaiting input, retries,
secret rotation, deletion, tenancy and bad input."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import openai
import pytest
from openai import OpenAI
from temporalio.client import WorkflowExecutionDescription, WorkflowExecutionStatus

from store.retention import KINDS
from tests.support.processes import EVENT_SECONDS, wait_until
from tests.support.rest import create_agent, create_session, final_turn
from tests.support.scripted_model import ScriptedModel, failure, text, tool_call
from tests.support.stack import SCRIPTED_MODEL, Stack
from tests.support.webhook_receiver import Receiver
from workflows.webhook_delivery import delivery_workflow_id

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def turn(what: str) -> Any:
    """A turn event type, typed `Any`: the SDK's parameter types list OpenAI's event types, not ours."""
    return f"turn.{what}"


RESPONSE_EVENTS = ["response.completed", "response.failed", "response.cancelled", "response.incomplete"]


@pytest.fixture
def client(stack: Stack) -> Iterator[OpenAI]:
    with OpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0, timeout=60) as made:
        yield made


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver().start()
    yield running
    running.stop()


@pytest.fixture
def endpoint(client: OpenAI, receiver: Receiver) -> Iterator[Any]:
    """An endpoint for every event type, on `receiver`; deleted afterwards so other tests' events do not
    reach it."""
    types = client.webhooks.event_types.list().data
    made = client.webhooks.create(name="test receiver", url=receiver.url, event_types=types)  # type: ignore[arg-type]
    yield made
    with contextlib.suppress(openai.NotFoundError):  # the test deleted it
        client.webhooks.delete(made.id)


def deliveries_of(http: httpx.Client, endpoint_id: str) -> list[dict[str, Any]]:
    response = http.get(f"/v1/webhook_endpoints/{endpoint_id}/deliveries")
    response.raise_for_status()
    return response.json()["data"]


def wait_for_log(http: httpx.Client, endpoint_id: str, status: str, seconds: float = EVENT_SECONDS) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        found = deliveries_of(http, endpoint_id)
        if found and found[0]["status"] == status:
            return found[0]
        assert time.monotonic() < deadline, f"the latest delivery is not {status}: {found}"
        time.sleep(0.1)


def listed(stack: Stack, query: str) -> list[str]:
    """The ids of the workflows a Temporal UI query finds (its visibility store catches up within moments)."""

    async def ids() -> list[str]:
        return [execution.id async for execution in stack.client.list_workflows(query)]

    return wait_until(lambda: stack.background.run(ids()), f"a workflow found by {query}", EVENT_SECONDS)


def closed(stack: Stack, workflow_id: str) -> WorkflowExecutionDescription:
    """The workflow's description once it has closed: the log shows an attempt's outcome as soon as the activity
    has recorded it, before Temporal records the activity's completion and the workflow's end."""
    handle = stack.client.get_workflow_handle(workflow_id)

    def ended() -> WorkflowExecutionDescription | None:
        described = stack.background.run(handle.describe())
        return described if described.status != WorkflowExecutionStatus.RUNNING else None

    return wait_until(ended, f"workflow {workflow_id} closing", EVENT_SECONDS)


def until_status(client: OpenAI, response_id: str, *statuses: str) -> Any:
    deadline = time.monotonic() + EVENT_SECONDS
    while (found := client.responses.retrieve(response_id)).status not in statuses:
        assert time.monotonic() < deadline, f"response is {found.status}"
        time.sleep(0.1)
    return found


def test_the_event_types_are_listed(client: OpenAI) -> None:
    types = client.webhooks.event_types.list().data
    assert types == [
        *RESPONSE_EVENTS,
        "turn.completed",
        "turn.failed",
        "turn.cancelled",
        "turn.awaiting_input",
        "agent.session.created",
        "agent.session.in_progress",
        "agent.session.action_required",
        "agent.session.idle",
        "agent.session.failed",
    ]


def test_an_endpoint_shows_its_secret_once_and_a_test_delivery_verifies(
    client: OpenAI, receiver: Receiver, endpoint: Any
) -> None:
    assert endpoint.signing_secret.startswith("whsec_") and endpoint.object == "webhook_endpoint"
    shown = client.webhooks.retrieve(endpoint.id)
    assert shown.signing_secret_hint == endpoint.signing_secret_hint and "signing_secret" not in shown.model_dump()
    assert endpoint.signing_secret not in str(client.webhooks.list().model_dump())
    assert endpoint.id in [made.id for made in client.webhooks.list()]

    result = client.webhooks.test(endpoint.id, event_type="response.completed")

    assert (result.status_code, result.event_type) == (200, "response.completed")
    assert result.webhook_endpoint_id == endpoint.id
    (delivered,) = receiver.wait_for(1)
    event = delivered.event(endpoint.signing_secret)
    assert event.type == "response.completed" and event.object == "event" and event.data.id
    assert delivered.headers["webhook-id"] == event.id
    with pytest.raises(openai.InvalidWebhookSignatureError):
        delivered.event("whsec_" + "A" * 43 + "=")
    receiver.answer(503)
    assert client.webhooks.test(endpoint.id, event_type=turn("awaiting_input")).status_code == 503

    updated = client.webhooks.update(endpoint.id, name="renamed", event_types=[turn("completed"), turn("completed")])
    assert (updated.name, updated.event_types, updated.url) == ("renamed", ["turn.completed"], receiver.url)
    assert updated.updated_at is not None and updated.created_at <= updated.updated_at
    assert client.webhooks.retrieve(endpoint.id).name == "renamed"


def test_a_background_response_that_completes_is_delivered_once(
    client: OpenAI, model: ScriptedModel, receiver: Receiver, endpoint: Any, http: httpx.Client, stack: Stack
) -> None:
    model.script(text("done"))
    created = client.responses.create(model=SCRIPTED_MODEL, input="go", background=True)

    (delivered,) = receiver.wait_for(1)
    event = delivered.event(endpoint.signing_secret)

    assert event.type == "response.completed" and event.data.id == created.id
    assert client.responses.retrieve(created.id).status == "completed"
    log = wait_for_log(http, endpoint.id, "delivered")
    assert log["event_id"] == event.id and log["event_type"] == "response.completed"
    assert [attempt["status_code"] for attempt in log["attempts"]] == [200]
    time.sleep(1.5)  # a sweep runs meanwhile: it starts nothing again
    assert len(receiver.deliveries) == 1

    # An operator finds the delivery in Temporal by endpoint and event; the secret is in no history nor row.
    handle = stack.client.get_workflow_handle(delivery_workflow_id(endpoint.id, event.id, 0))
    described = closed(stack, handle.id)
    assert described.status == WorkflowExecutionStatus.COMPLETED
    assert stack.background.run(described.memo()) == {
        "delivery_id": log["id"],
        "endpoint_id": endpoint.id,
        "event_id": event.id,
        "event_type": "response.completed",
    }
    query = f'WorkflowType = "WebhookDelivery" AND WorkflowId STARTS_WITH "webhook-{endpoint.id}"'
    assert listed(stack, query) == [handle.id]
    history = stack.background.run(handle.fetch_history()).to_json()
    secret_key = endpoint.signing_secret.removeprefix("whsec_")
    assert secret_key not in history and secret_key not in stack.store_text()
    metrics = http.get("/metrics").text
    assert 'durable_agents_webhook_deliveries_sent_total{event_type="response.completed"}' in metrics
    assert "durable_agents_webhook_oldest_pending_seconds" in metrics


def test_a_cancelled_background_response_is_delivered(
    client: OpenAI, model: ScriptedModel, receiver: Receiver, endpoint: Any
) -> None:
    model.script(text("slow " * 50, token_delay_seconds=0.1))
    created = client.responses.create(model=SCRIPTED_MODEL, input="go", background=True)
    until_status(client, created.id, "in_progress")
    client.responses.cancel(created.id)

    (delivered,) = receiver.wait_for(1)
    event = delivered.event(endpoint.signing_secret)

    assert event.type == "response.cancelled" and event.data.id == created.id


def test_a_response_cut_short_is_incomplete_and_a_failed_one_failed(
    client: OpenAI, model: ScriptedModel, receiver: Receiver, endpoint: Any
) -> None:
    model.script(text("cut off mid", finish_reason="length"), failure(400))
    cut = client.responses.create(model=SCRIPTED_MODEL, input="x", max_output_tokens=16, background=True)
    until_status(client, cut.id, "incomplete")
    failed = client.responses.create(model=SCRIPTED_MODEL, input="x", background=True)
    until_status(client, failed.id, "failed")

    events = [delivery.event(endpoint.signing_secret) for delivery in receiver.wait_for(2)]

    assert sorted((event.type, event.data.id) for event in events) == sorted(
        [("response.incomplete", cut.id), ("response.failed", failed.id)]
    )


def test_a_response_paused_on_a_function_call_is_completed_for_its_caller(
    client: OpenAI, model: ScriptedModel, receiver: Receiver, endpoint: Any
) -> None:
    model.script(tool_call("get_weather", {"city": "Paris"}), text("sunny"))
    created = client.responses.create(model=SCRIPTED_MODEL, input="weather?", tools=[WEATHER], background=True)  # type: ignore[list-item]

    (delivered,) = receiver.wait_for(1)
    event = delivered.event(endpoint.signing_secret)

    assert event.type == "response.completed" and event.data.id == created.id
    paused = client.responses.retrieve(created.id)
    (call,) = [item for item in paused.output if item.type == "function_call"]
    resumed = client.responses.create(
        model=SCRIPTED_MODEL,
        previous_response_id=created.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}],
        tools=[WEATHER],  # type: ignore[list-item]
        background=True,
    )
    second = receiver.wait_for(2)[1].event(endpoint.signing_secret)
    assert second.type == "response.completed" and second.data.id == resumed.id


def test_a_llama_stack_turn_awaiting_input_names_its_session_turn_and_calls(
    http: httpx.Client, model: ScriptedModel, receiver: Receiver, endpoint: Any
) -> None:
    model.script(tool_call("get_boiling_point", {"liquid_name": "tea"}), text("100 C"))
    agent_id = create_agent(http)
    session_id = create_session(http, agent_id)
    turns = f"/v1/agents/{agent_id}/session/{session_id}/turn"
    paused = final_turn(http.post(turns, json={"messages": [{"role": "user", "content": "boil"}], "stream": True}))

    (delivered,) = receiver.wait_for(1)
    event = delivered.event(endpoint.signing_secret)  # verified by the SDK; parsed as our own event type
    body = delivered.body.decode()

    assert paused["status"] == "awaiting_input"
    assert event.type == "turn.awaiting_input" and event.id == delivered.headers["webhook-id"]
    data = event.data.model_dump()  # the SDK has no class of its own for our turn events: it keeps every field
    call = paused["output_message"]["tool_calls"][0]
    assert data["id"] == paused["turn_id"] and data["session_id"] == session_id and data["agent_id"] == agent_id
    assert data["tool_calls"] == [{"call_id": call["call_id"], "tool_name": "get_boiling_point"}]
    assert '"object":"event"' in body

    results = {"tool_responses": [{"call_id": call["call_id"], "tool_name": call["tool_name"], "content": "100"}]}
    assert http.post(f"{turns}/{paused['turn_id']}/resume", json=results).status_code == 200
    completed = receiver.wait_for(2)[1].event(endpoint.signing_secret)
    assert completed.type == "turn.completed"


def test_a_receiver_that_fails_twice_gets_the_same_event_a_third_time(
    client: OpenAI, model: ScriptedModel, receiver: Receiver, endpoint: Any, http: httpx.Client, stack: Stack
) -> None:
    receiver.answer(500, 502)
    model.script(text("done"))
    created = client.responses.create(model=SCRIPTED_MODEL, input="go", background=True)

    first, second, third = receiver.wait_for(3)

    events = [delivery.event(endpoint.signing_secret) for delivery in (first, second, third)]
    assert {event.id for event in events} == {first.headers["webhook-id"]}
    assert {event.data.id for event in events} == {created.id}
    assert [delivery.status for delivery in (first, second, third)] == [500, 502, 200]
    log = wait_for_log(http, endpoint.id, "delivered")
    assert [attempt["status_code"] for attempt in log["attempts"]] == [500, 502, 200]
    assert log["attempts"][0]["error"].startswith("HTTP 500")
    time.sleep(1.5)
    assert len(receiver.deliveries) == 3

    redelivered = http.post(f"/v1/webhook_endpoints/{endpoint.id}/deliveries/{log['id']}/redeliver")
    assert redelivered.status_code == 200 and redelivered.json()["redeliveries"] == 1
    fourth = receiver.wait_for(4)[3]
    assert fourth.headers["webhook-id"] == first.headers["webhook-id"] and fourth.status == 200
    assert wait_for_log(http, endpoint.id, "delivered")["attempts"][-1]["status_code"] == 200

    # The log is kept for its TTL (DA_WEBHOOK_LOG_RETENTION); then retention's sweep deletes the ended
    # delivery, and keeps a pending one.
    receiver.answer(*[500] * 20)
    client.webhooks.test(endpoint.id, event_type="response.completed")  # not logged: sent at once
    model.script(text("again"))
    client.responses.create(model=SCRIPTED_MODEL, input="go", background=True)
    wait_for_log(http, endpoint.id, "pending")
    prune = KINDS["webhook_deliveries"].prune
    assert prune is not None
    stack.background.run(stack.store.database.write(lambda tx: prune(tx, datetime.now(UTC) + timedelta(days=1), 500)))
    assert [delivery["status"] for delivery in deliveries_of(http, endpoint.id)] == ["pending"]


def test_a_rotation_that_keeps_the_old_secret_signs_with_both(
    client: OpenAI, receiver: Receiver, endpoint: Any
) -> None:
    old = endpoint.signing_secret
    rotated = client.webhooks.rotate_secret(endpoint.id, keep_old_secret_active_for_24_hours=True)
    assert rotated.signing_secret != old and rotated.signing_secret_hint != endpoint.signing_secret_hint

    client.webhooks.test(endpoint.id, event_type="response.completed")
    (both,) = receiver.wait_for(1)
    assert len(both.headers["webhook-signature"].split()) == 2
    assert both.verifies_with(old) and both.verifies_with(rotated.signing_secret)

    newest = client.webhooks.rotate_secret(endpoint.id)
    client.webhooks.test(endpoint.id, event_type="response.completed")
    only = receiver.wait_for(2)[1]
    assert only.verifies_with(newest.signing_secret)
    assert not only.verifies_with(rotated.signing_secret) and not only.verifies_with(old)


def test_deleting_an_endpoint_stops_its_pending_deliveries(
    client: OpenAI, model: ScriptedModel, receiver: Receiver, endpoint: Any, stack: Stack
) -> None:
    receiver.answer(*[500] * 20)
    model.script(text("done"))
    client.responses.create(model=SCRIPTED_MODEL, input="go", background=True)
    first = receiver.wait_for(1)[0]

    deleted = client.webhooks.delete(endpoint.id)

    assert deleted.deleted and deleted.id == endpoint.id
    seen = len(receiver.deliveries)
    time.sleep(4)  # longer than the rest of the test schedule
    assert len(receiver.deliveries) <= seen + 1  # at most an attempt already under way
    workflow_id = delivery_workflow_id(endpoint.id, first.headers["webhook-id"], 0)
    assert closed(stack, workflow_id).status == WorkflowExecutionStatus.CANCELED
    with pytest.raises(openai.NotFoundError):
        client.webhooks.retrieve(endpoint.id)


def test_bad_input_is_refused_with_a_reason(client: OpenAI, receiver: Receiver, endpoint: Any) -> None:
    cases = [
        ("ftp://example.com/hook", ["response.completed"], "https://"),
        ("https://10.1.2.3/hook", ["response.completed"], "private"),
        ("https://169.254.169.254/latest", ["response.completed"], "metadata"),
        ("http://example.com/hook", ["response.completed"], "https://"),
        (receiver.url, ["response.exploded"], "response.exploded"),
        (receiver.url, [], "at least 1"),
    ]
    for url, types, reason in cases:
        with pytest.raises(openai.BadRequestError) as refused:
            client.webhooks.create(name="bad", url=url, event_types=types)  # type: ignore[arg-type]
        assert reason in refused.value.message, (url, refused.value.message)
    with pytest.raises(openai.BadRequestError):
        client.webhooks.update(endpoint.id, url="https://192.168.0.10/hook")
    with pytest.raises(openai.BadRequestError):
        client.webhooks.test(endpoint.id, event_type="nope")  # type: ignore[arg-type]
    for call in (
        lambda: client.webhooks.retrieve("we_missing"),
        lambda: client.webhooks.update("we_missing", name="x"),
        lambda: client.webhooks.delete("we_missing"),
        lambda: client.webhooks.rotate_secret("we_missing"),
        lambda: client.webhooks.test("we_missing", event_type="response.completed"),
    ):
        with pytest.raises(openai.NotFoundError):
            call()
    assert client.webhooks.retrieve(endpoint.id).url == receiver.url


def test_a_server_without_a_credentials_key_keeps_no_secrets(stack: Stack, receiver: Receiver) -> None:
    with stack.other_api(stack.settings.model_copy(update={"credentials_key": None})) as url:
        keyless = OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        with pytest.raises(openai.BadRequestError, match="DA_CREDENTIALS_KEY"):
            keyless.webhooks.create(name="x", url=receiver.url, event_types=["response.completed"])


def test_a_tenant_has_at_most_the_configured_number_of_endpoints(stack: Stack, receiver: Receiver) -> None:
    settings = stack.settings.model_copy(update={"api_keys": ("few:few-key-0123456789",)})
    with stack.other_api(settings.model_copy(update={"max_webhook_endpoints_per_tenant": 1})) as url:
        few = OpenAI(base_url=f"{url}/v1", api_key="few-key-0123456789", max_retries=0)
        first = few.webhooks.create(name="one", url=receiver.url, event_types=["response.completed"])
        with pytest.raises(openai.ConflictError, match="DA_MAX_WEBHOOK_ENDPOINTS_PER_TENANT"):
            few.webhooks.create(name="two", url=receiver.url, event_types=["response.completed"])
        few.webhooks.delete(first.id)
        few.webhooks.delete(few.webhooks.create(name="two", url=receiver.url, event_types=["response.failed"]).id)


WEBHOOK_ROUTES = {
    ("get", "/v1/webhook_event_types"),  # the same for every tenant
    ("post", "/v1/webhook_endpoints"),
    ("get", "/v1/webhook_endpoints"),
    ("get", "/v1/webhook_endpoints/{endpoint_id}"),
    ("post", "/v1/webhook_endpoints/{endpoint_id}"),
    ("delete", "/v1/webhook_endpoints/{endpoint_id}"),
    ("post", "/v1/webhook_endpoints/{endpoint_id}/rotate_secret"),
    ("post", "/v1/webhook_endpoints/{endpoint_id}/test"),
    ("get", "/v1/webhook_endpoints/{endpoint_id}/deliveries"),
    ("post", "/v1/webhook_endpoints/{endpoint_id}/deliveries/{delivery_id}/redeliver"),
}
"""Walked by the tenancy test here (tests/security/test_tenancy.py counts them as walked)."""


def _foreign_requests(endpoint_id: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    path = f"/v1/webhook_endpoints/{endpoint_id}"
    return [
        ("get", path, None),
        ("post", path, {"name": "taken"}),
        ("post", f"{path}/rotate_secret", {}),
        ("post", f"{path}/test", {"event_type": "response.completed"}),
        ("get", f"{path}/deliveries", None),
        ("post", f"{path}/deliveries/whd_x/redeliver", None),
        ("delete", path, None),
    ]


def test_the_tenancy_walk_covers_every_webhook_route() -> None:
    walked = {
        (method, path.replace("we_x", "{endpoint_id}").replace("whd_x", "{delivery_id}"))
        for method, path, _ in _foreign_requests("we_x")
    }
    listing = {("get", "/v1/webhook_event_types"), ("post", "/v1/webhook_endpoints"), ("get", "/v1/webhook_endpoints")}
    assert walked | listing == WEBHOOK_ROUTES


def test_a_tenant_receives_only_its_own_events(stack: Stack, model: ScriptedModel) -> None:
    entries = ("alpha:alpha-key-0123456789", "beta:beta-key-0123456789")
    alpha_receiver, beta_receiver = Receiver().start(), Receiver().start()
    try:
        with stack.other_api(stack.settings.model_copy(update={"api_keys": entries})) as url:
            alpha = OpenAI(base_url=f"{url}/v1", api_key="alpha-key-0123456789", max_retries=0)
            beta = OpenAI(base_url=f"{url}/v1", api_key="beta-key-0123456789", max_retries=0)
            mine = alpha.webhooks.create(name="a", url=alpha_receiver.url, event_types=["response.completed"])
            theirs = beta.webhooks.create(name="b", url=beta_receiver.url, event_types=["response.completed"])
            assert [made.id for made in beta.webhooks.list()] == [theirs.id]
            more = [
                beta.webhooks.create(name=f"b{n}", url=beta_receiver.url, event_types=[turn("failed")]) for n in (1, 2)
            ]
            paged = [made.id for made in beta.webhooks.list(limit=2)]  # the SDK pages on with `after`
            assert paged == [more[1].id, more[0].id, theirs.id]
            for made in more:
                beta.webhooks.delete(made.id)
            with httpx.Client(
                base_url=url, headers={"Authorization": "Bearer beta-key-0123456789"}, timeout=60
            ) as http:
                for method, path, body in _foreign_requests(mine.id):
                    assert http.request(method, path, json=body).status_code == 404, (method, path)

            model.script(text("alpha's"))
            created = alpha.responses.create(model=SCRIPTED_MODEL, input="go", background=True)

            (delivered,) = alpha_receiver.wait_for(1)
            assert delivered.event(mine.signing_secret).data.id == created.id
            time.sleep(1.5)
            assert beta_receiver.deliveries == []
            alpha.webhooks.delete(mine.id)
            beta.webhooks.delete(theirs.id)
    finally:
        alpha_receiver.stop()
        beta_receiver.stop()
