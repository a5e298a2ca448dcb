"""A file_search step survives its worker's SIGKILL: the worker dies after the search found its results and before
it reported them; a new worker runs the step again and the response completes once, with the same results."""

from __future__ import annotations

import time

import openai
import pytest
from openai.types.responses import ResponseOutputMessage

from hosting.fault_points import DURING_SEARCH
from tests.support.knowledge_files import wait_for_file
from tests.support.processes import ProcessStack
from tests.support.scripted_model import text, tool_call
from tests.support.stack import SCRIPTED_MODEL

pytestmark = pytest.mark.processes


@pytest.mark.timeout(300)
def test_worker_killed_mid_search_the_response_completes_once_with_the_same_results(
    processes: ProcessStack,
) -> None:
    client = openai.OpenAI(base_url=f"{processes.url}/v1", api_key="unused", max_retries=2, timeout=60)
    handbook = client.files.create(
        file=("handbook.txt", b"Lifeboat drills happen every Tuesday at noon on deck four."), purpose="assistants"
    )
    recipes = client.files.create(file=("recipes.txt", b"The galley bakes rye bread on Fridays."), purpose="assistants")
    store = client.vector_stores.create(name="ship", file_ids=[handbook.id, recipes.id])
    for file_id in (handbook.id, recipes.id):
        assert wait_for_file(client, store.id, file_id).status == "completed"
    expected = client.vector_stores.search(store.id, query="lifeboat drills", max_num_results=5)

    processes.model.script(tool_call("file_search", {"query": "lifeboat drills"}), text("Drills are on Tuesdays."))
    processes.kill(processes.worker)
    processes.start_worker(DA_TEST_FAULT=DURING_SEARCH)
    response = client.responses.create(
        model=SCRIPTED_MODEL,
        input="When are the drills?",
        tools=[{"type": "file_search", "vector_store_ids": [store.id], "max_num_results": 5}],
        include=["file_search_call.results"],
        background=True,
    )
    assert processes.worker is not None and processes.worker.wait(timeout=60) == -9  # died mid-step
    running = client.responses.retrieve(response.id)
    assert running.status == "in_progress" and running.output[0].status == "in_progress"

    processes.start_worker()
    deadline = time.monotonic() + 120
    while (response := client.responses.retrieve(response.id)).status in ("queued", "in_progress"):
        assert time.monotonic() < deadline, response
        time.sleep(0.2)
    assert response.status == "completed", response.error
    assert [item.type for item in response.output] == ["file_search_call", "message"]
    call = response.output[0]
    assert call.status == "completed" and call.queries == ["lifeboat drills"]
    assert [(r.file_id, r.score, r.text) for r in call.results] == [
        (r.file_id, r.score, r.content[0].text) for r in expected.data
    ]
    answer = response.output[1]
    assert isinstance(answer, ResponseOutputMessage)
    assert answer.content[0].text.strip() == "Drills are on Tuesdays."
    assert len(processes.model.requests) == 2  # one model call before the search, one after: none repeated
    # The stream replays the search once.
    kinds = [event.type for event in client.responses.retrieve(response.id, stream=True)]
    assert kinds.count("response.file_search_call.completed") == 1
