"""A worker killed (SIGKILL) during a turn's compaction step: the response completes once, with one
compaction item, whether the worker died while the model wrote the summary or right after it was stored.
And a tenant erasure whose worker dies mid-way goes on to the end once a worker runs again."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.fernet import Fernet

from compaction.summary import SUMMARY_INSTRUCTIONS
from hosting.fault_points import AFTER_COMPACTION, AFTER_ERASE_BATCH
from tests.support.processes import EVENT_SECONDS, ProcessStack
from tests.support.scripted_model import text
from tests.support.stack import SCRIPTED_MODEL

pytestmark = pytest.mark.processes

MANAGED = [{"type": "compaction", "compact_threshold": 20}]
OPERATOR_KEY = "operator-key-for-faults-0123"


@pytest.fixture(scope="module")
def processes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessStack]:
    data_dir = Path(tmp_path_factory.mktemp("compaction-faults"))
    environment = {"DA_CREDENTIALS_KEY": Fernet.generate_key().decode(), "DA_OPERATOR_KEY": OPERATOR_KEY}
    running = ProcessStack(data_dir, environment, log_dir=data_dir)
    yield running
    running.close()


@pytest.fixture
def http(processes: ProcessStack) -> Iterator[httpx.Client]:
    processes.model.script()
    with httpx.Client(base_url=processes.url, timeout=120) as client:
        yield client


def _first(http: httpx.Client) -> str:
    """A response whose context the next one compacts."""
    answered = http.post("/v1/responses", json={"model": SCRIPTED_MODEL, "input": "an opening question " * 10})
    assert answered.status_code == 200 and answered.json()["status"] == "completed"
    return answered.json()["id"]


def _compacting(http: httpx.Client, previous: str) -> str:
    body = {
        "model": SCRIPTED_MODEL,
        "input": "the follow-up",
        "previous_response_id": previous,
        "context_management": MANAGED,
        "background": True,
    }
    created = http.post("/v1/responses", json=body)
    assert created.status_code == 200, created.text
    return created.json()["id"]


def _ended(http: httpx.Client, response_id: str, seconds: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        response = http.get(f"/v1/responses/{response_id}").json()
        if response["status"] not in ("queued", "in_progress"):
            return response
        time.sleep(0.2)
    raise AssertionError(f"{response_id} did not end within {seconds:.0f} s")


def _summaries(processes: ProcessStack) -> int:
    return sum(1 for body in processes.model.requests if body["messages"][0]["content"] == SUMMARY_INSTRUCTIONS)


def test_worker_killed_while_the_model_writes_the_summary(processes: ProcessStack, http: httpx.Client) -> None:
    previous = _first(http)
    unanswered = threading.Event()  # the first summary lasts until the worker asking for it is gone
    processes.model.script(text("slow summary", held_until=unanswered), text("the summary"), text("the answer"))
    response_id = _compacting(http, previous)
    try:
        processes.wait_for_model_requests(1)
        processes.kill(processes.worker)
    finally:
        unanswered.set()
    processes.start_worker()

    response = _ended(http, response_id)
    assert response["status"] == "completed"
    assert [item["type"] for item in response["output"]] == ["compaction", "message"]
    assert response["output"][1]["content"][0]["text"].strip() == "the answer"
    assert _summaries(processes) == 2  # the killed attempt's, then the retry's
    answer = processes.model.requests[-1]["messages"]
    assert answer[0]["content"].endswith("the summary") and answer[-1]["content"] == "the follow-up"


def test_worker_killed_after_the_summary_was_stored(processes: ProcessStack, http: httpx.Client) -> None:
    previous = _first(http)
    processes.kill(processes.worker)
    processes.start_worker(DA_TEST_FAULT=AFTER_COMPACTION)
    processes.model.script(text("the only summary"), text("the answer"))
    response_id = _compacting(http, previous)
    processes.wait_for_model_requests(1)
    deadline = time.monotonic() + EVENT_SECONDS
    while processes.worker is not None and processes.worker.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes.worker is not None and processes.worker.poll() is not None, "the worker did not crash"

    processes.start_worker()
    response = _ended(http, response_id)
    assert response["status"] == "completed"
    assert [item["type"] for item in response["output"]] == ["compaction", "message"]
    assert _summaries(processes) == 1  # the retry found the summary stored: the model was not asked again
    events = http.get(f"/v1/responses/{response_id}", params={"stream": "true"}).text
    assert events.count("event: response.compaction.compacting") == 1  # one compaction item streamed


def test_a_tenant_erasure_cut_short_by_a_crash_completes(processes: ProcessStack, http: httpx.Client) -> None:
    made = [http.post("/v1/responses", json={"model": SCRIPTED_MODEL, "input": f"row {n}"}).json() for n in range(3)]
    conversation = http.post("/v1/conversations", json={"items": [{"role": "user", "content": "x"}]}).json()
    upload = {"file": ("notes.md", b"Seals dive for herring.")}
    file = http.post("/v1/files", files=upload, data={"purpose": "assistants"}).json()
    vector_store = http.post("/v1/vector_stores", json={"name": "notes"}).json()
    blob = processes.data_dir / "files" / file["id"]
    assert blob.exists()
    processes.kill(processes.worker)
    processes.start_worker(DA_TEST_FAULT=AFTER_ERASE_BATCH)
    operator = {"Authorization": f"Bearer {OPERATOR_KEY}"}
    first = http.delete("/v1/operator/tenants/default", headers=operator, timeout=60)
    assert first.status_code == 202 and first.json()["status"] == "in_progress"
    deadline = time.monotonic() + EVENT_SECONDS
    while processes.worker is not None and processes.worker.poll() is None:  # dies after the first batch
        assert time.monotonic() < deadline, "the worker did not crash"
        time.sleep(0.2)
    assert http.get(f"/v1/conversations/{conversation['id']}").status_code == 200  # not reached yet

    processes.start_worker()
    deadline = time.monotonic() + EVENT_SECONDS
    while http.get(f"/v1/conversations/{conversation['id']}").status_code != 404:
        assert time.monotonic() < deadline, "the erasure did not go on after the crash"
        time.sleep(0.2)
    for response in made:
        assert http.get(f"/v1/responses/{response['id']}").status_code == 404
    while http.get(f"/v1/files/{file['id']}").status_code != 404:  # the files go last
        assert time.monotonic() < deadline, "the erasure did not reach the files"
        time.sleep(0.2)
    assert http.get(f"/v1/vector_stores/{vector_store['id']}").status_code == 404 and not blob.exists()
    # The erasure itself ends (asking meanwhile joins it); asked again afterwards, there is nothing left.
    while http.delete("/v1/operator/tenants/default", headers=operator).json()["status"] != "completed":
        assert time.monotonic() < deadline, "the erasure did not end"
    again = http.delete("/v1/operator/tenants/default", headers=operator).json()
    assert again["status"] == "completed" and again["deleted"] == {}
