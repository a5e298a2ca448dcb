"""What the tests of the knowledge, webhooks and automations, and usage pages share: a tenant's console session
over plain HTTP, and the objects the pages show, made through the API as a client makes them."""

from __future__ import annotations

import secrets
import time
from typing import Any

import httpx

from configuration.model_specs import BUILTIN_EMBEDDING_MODEL_ID
from tests.agents_beta.test_spend_control import wait_status
from tests.inbox.waiting import NONE, Tenant
from tests.support.processes import EVENT_SECONDS
from tests.support.scripted_model import ScriptedModel, text
from tests.support.stack import PRICED_MODEL, SCRIPTED_MODEL
from tests.support.webhook_receiver import Receiver

NOTES = (
    "Puffins nest on the cliff above the harbour every spring.\n\n"
    "The lighthouse keeper writes the herring catch in his ledger.\n\n"
    "A glacier left the moraine that shapes the valley floor."
)


def console(tenant: Tenant) -> httpx.Client:
    """The tenant signed in to the console: its key cookie and a CSRF cookie, as a browser would hold them;
    `.csrf` is the token a page's forms carry."""
    key = tenant.http.headers["authorization"].removeprefix("Bearer ")
    token = secrets.token_urlsafe(16)
    client = httpx.Client(
        base_url=str(tenant.http.base_url), cookies={"da_console_key": key, "da_console_csrf": token}, timeout=60
    )
    client.csrf = token  # type: ignore[attr-defined]
    return client


def vector_store(tenant: Tenant, name: str) -> str:
    made = tenant.http.post("/v1/vector_stores", json={"name": name, "embedding_model": BUILTIN_EMBEDDING_MODEL_ID})
    assert made.status_code == 200, made.text
    return str(made.json()["id"])


def store_files(tenant: Tenant, store_id: str) -> list[dict[str, Any]]:
    listed = tenant.http.get(f"/v1/vector_stores/{store_id}/files")
    assert listed.status_code == 200, listed.text
    return list(listed.json()["data"])


def wait_ingested(tenant: Tenant, store_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + EVENT_SECONDS
    while (store := tenant.http.get(f"/v1/vector_stores/{store_id}").json())["file_counts"]["in_progress"]:
        assert time.monotonic() < deadline, store
        time.sleep(0.2)
    return store


def endpoint_with_delivery(tenant: Tenant, model: ScriptedModel, receiver: Receiver) -> tuple[str, dict[str, Any]]:
    """An endpoint for completed responses on `receiver`, and its delivery of one background response, delivered."""
    made = tenant.http.post(
        "/v1/webhook_endpoints", json={"name": "ops", "url": receiver.url, "event_types": ["response.completed"]}
    )
    assert made.status_code == 200, made.text
    endpoint_id = made.json()["id"]
    model.script(text("done"))
    tenant.openai.responses.create(model=SCRIPTED_MODEL, input="go", background=True)
    deadline = time.monotonic() + EVENT_SECONDS
    while True:
        found = tenant.http.get(f"/v1/webhook_endpoints/{endpoint_id}/deliveries").json()["data"]
        if found and found[0]["status"] == "delivered":
            return endpoint_id, found[0]
        assert time.monotonic() < deadline, found
        time.sleep(0.1)


def weekly_automation(tenant: Tenant, name: str) -> Any:
    """A periodic automation that runs on Mondays at 09:00 in Oslo: never within a test."""
    target: Any = {
        "type": "new_session",
        "environment": NONE,
        "agent": {"model": SCRIPTED_MODEL, "instructions": "Report briefly."},
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Report."}]}],
    }
    return tenant.openai.beta.agents.automations.create(
        type="periodic", name=name, expression="0 9 * * 1", timezone="Europe/Oslo", target=target
    )


def priced_session(tenant: Tenant, model: ScriptedModel, reply: str) -> None:
    """One Agents API session turn on the priced model (a cent a token), finished: what the usage page sums."""
    model.script(text(reply))
    created = tenant.openai.beta.agents.sessions.create(
        environment=NONE, agent={"model": PRICED_MODEL, "instructions": "Brief."}, input="Say hello to me"
    )
    assert wait_status(tenant.openai, created.id, "idle").status == "idle"
