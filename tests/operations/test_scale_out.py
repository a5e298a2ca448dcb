"""Scale-out, proven: two API processes and two workers on one Temporal server and PostgreSQL.

Clients spread each turn across both APIs — create on one, resume and read its stream on the
other — while one worker and one API are SIGKILLed mid-run. A client that loses its API retries
on the other with the same Idempotency-Key (create) or the same results (resume). Every turn
completes exactly once: one turn per request, one completion, one tool execution per tool call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from configuration.loading import load_settings
from serve import dev_server_command
from tests.support.databases import postgres_database
from tests.support.processes import ROOT, wait_until
from tests.support.rest import sse_events
from tests.support.stack import free_port

pytestmark = pytest.mark.processes

SESSIONS = 10
TURNS_PER_SESSION = 3
MODEL = "bench"
LOOKUP_TOOL = {
    "name": "lookup",
    "description": "Look something up",
    "parameters": [{"name": "query", "parameter_type": "str", "description": "What", "required": False}],
}
RUN_SECONDS = 120
STARTUP_SECONDS = 180
"""Generous: five Python processes and a dev server starting at once on a shared 2-core box."""


class Cluster:
    """One dev server, a model server, N APIs and M workers, all separate processes on one store."""

    def __init__(self, data_dir: Path, store_url: str) -> None:
        self._logs = data_dir
        self._processes: list[subprocess.Popen[bytes]] = []
        try:
            self._start(data_dir, store_url)
        except BaseException:  # a process that did not come up: stop the ones that did
            self.close()
            raise

    def _start(self, data_dir: Path, store_url: str) -> None:
        model_port = free_port()
        self.model = self._spawn(
            "model",
            [
                sys.executable,
                "bench/model_server.py",
                "--port",
                str(model_port),
                "--ttft-ms",
                "300",
                "--token-ms",
                "20",
            ],
            {},
        )
        temporal_port = free_port()
        self.env = {
            **os.environ,
            "DA_DATA_DIR": str(data_dir),
            "DA_STORE_URL": store_url,
            "DA_TEMPORAL_PORT": str(temporal_port),
            "DA_TEMPORAL_UI_PORT": str(free_port()),
            "TEMPORAL_ADDRESS": f"127.0.0.1:{temporal_port}",
            "DA_TASK_QUEUE": "scale-out",
            "DA_UNSTARTED_TURN_SWEEP": "2",
            "DA_MODELS": json.dumps({MODEL: {"provider": "openai", "base_url": f"http://127.0.0.1:{model_port}/v1"}}),
        }
        self.temporal = self._spawn("temporal", dev_server_command(load_settings(self.env)), self.env)
        wait_until(
            lambda: httpx.get(f"http://127.0.0.1:{self.env['DA_TEMPORAL_UI_PORT']}", timeout=1),
            "Temporal up",
            seconds=STARTUP_SECONDS,
        )
        wait_until(
            lambda: httpx.get(f"http://127.0.0.1:{model_port}/health", timeout=1), "model up", seconds=STARTUP_SECONDS
        )
        self.api_urls: list[str] = []
        self.apis: list[subprocess.Popen[bytes]] = []
        self.workers: list[subprocess.Popen[bytes]] = []
        for number in range(2):
            port = free_port()
            command = [sys.executable, "-m", "uvicorn", "api.app:app", "--port", str(port)]
            self.apis.append(self._spawn(f"api{number}", command, self.env))
            self.api_urls.append(f"http://127.0.0.1:{port}")
            if number == 0:  # the first creates the schema; the others start alongside
                self._wait_for_api(0)
                self.workers = [self._spawn(f"worker{n}", [sys.executable, "worker.py"], self.env) for n in range(2)]
        self._wait_for_api(1)

    def _wait_for_api(self, number: int) -> None:
        url = f"{self.api_urls[number]}/v1/health"
        wait_until(lambda: httpx.get(url, timeout=1).status_code == 200, f"API {number} up", seconds=STARTUP_SECONDS)

    def _spawn(self, name: str, command: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        with (self._logs / f"{name}.log").open("ab") as log:
            process = subprocess.Popen(command, cwd=ROOT, env=env or None, stdout=log, stderr=subprocess.STDOUT)
        self._processes.append(process)
        return process

    def close(self) -> None:
        for process in reversed(self._processes):
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with postgres_database() as store_url:
        running = Cluster(tmp_path, store_url)
        try:
            yield running
        finally:
            running.close()


class Client:
    """A careful client: a request its API did not answer goes to the other API, same key, same body."""

    def __init__(self, urls: list[str], first: int) -> None:
        self._urls = urls
        self._next = first
        self.retries = 0

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        deadline = time.monotonic() + RUN_SECONDS
        while True:
            url = self._urls[self._next % len(self._urls)]
            try:
                response = httpx.request(method, url + path, timeout=60, **kwargs)
                if response.status_code < 500 or response.headers.get("x-should-retry") == "false":
                    return response
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, f"{method} {path} got no answer from any API"
            self.retries += 1
            self._next += 1
            time.sleep(0.3)

    def switch(self) -> None:
        """Send the next request to the other API."""
        self._next += 1


def _run_turn(client: Client, turns: str, number: int, uses_tool: bool) -> str:
    """Create the turn on one API, resume it on the other; returns its id once it completed."""
    content = f"turn {number}: please use the tool" if uses_tool else f"turn {number}: just answer"
    create = {"messages": [{"role": "user", "content": content}], "stream": False}
    created = client.request("POST", turns, json=create, headers={"Idempotency-Key": f"turn-{number}"})
    assert created.status_code == 200, created.text
    turn = created.json()
    turn_id = turn["turn_id"]
    client.switch()
    if uses_tool:
        assert turn["status"] == "awaiting_input", turn
        results = [
            {"call_id": call["call_id"], "tool_name": call["tool_name"], "content": f"result {number}"}
            for call in turn["output_message"]["tool_calls"]
        ]
        resumed = client.request("POST", f"{turns}/{turn_id}/resume", json={"tool_responses": results})
        # 409: an earlier attempt, cut off with its API, got through; the turn goes on without us.
        assert resumed.status_code in (200, 409), resumed.text
    deadline = time.monotonic() + RUN_SECONDS
    while (status := client.request("GET", f"{turns}/{turn_id}").json()["status"]) != "completed":
        assert status in ("running", "awaiting_input"), f"turn {turn_id} ended {status}"
        assert time.monotonic() < deadline, f"turn {turn_id} did not complete"
        time.sleep(0.2)
    return turn_id


def _event_types(client: Client, events_path: str) -> list[str]:
    """The type of every event of a finished turn, read pause by pause as a reconnecting client would."""
    kinds: list[str] = []
    after = 0
    while not kinds or kinds[-1] != "turn_complete":
        events = sse_events(client.request("GET", events_path, params={"after": after}))
        assert events, f"no events after {after}: {kinds}"
        after = max(event_id or after for event_id, _ in events)
        kinds += [body["event"]["payload"]["event_type"] for _, body in events if "event" in body]
    return kinds


def test_two_apis_two_workers_one_of_each_killed_every_turn_completes_once(cluster: Cluster) -> None:
    http = Client(cluster.api_urls, 0)
    agent = {"model": MODEL, "instructions": "Be brief.", "client_tools": [LOOKUP_TOOL], "max_infer_iters": 5}
    agent_id = http.request("POST", "/v1/agents", json={"agent_config": agent}).json()["agent_id"]
    sessions = [
        http.request("POST", f"/v1/agents/{agent_id}/session", json={"session_name": f"s{n}"}).json()["session_id"]
        for n in range(SESSIONS)
    ]
    done: dict[int, str] = {}
    failures: list[BaseException] = []

    def run_session(index: int, session_id: str) -> None:
        client = Client(cluster.api_urls, index)
        try:
            for k in range(TURNS_PER_SESSION):
                number = index * TURNS_PER_SESSION + k
                turns = f"/v1/agents/{agent_id}/session/{session_id}/turn"
                done[number] = _run_turn(client, turns, number, uses_tool=number % 3 != 2)
        except BaseException as failure:  # reported by the main thread
            failures.append(failure)

    threads = [threading.Thread(target=run_session, args=pair) for pair in enumerate(sessions)]
    for thread in threads:
        thread.start()
    wait_until(lambda: len(done) >= SESSIONS // 2, "the first turns", seconds=RUN_SECONDS)
    cluster.workers[0].kill()
    cluster.apis[0].kill()
    killed_at = len(done)
    for thread in threads:
        thread.join(timeout=RUN_SECONDS)
    assert not failures, failures
    total = SESSIONS * TURNS_PER_SESSION
    assert len(done) == total and killed_at < total

    survivor = Client(cluster.api_urls[1:], 0)
    for index, session_id in enumerate(sessions):
        turns = f"/v1/agents/{agent_id}/session/{session_id}/turn"
        stored = survivor.request("GET", f"/v1/agents/{agent_id}/session/{session_id}").json()["turns"]
        numbers = [index * TURNS_PER_SESSION + k for k in range(TURNS_PER_SESSION)]
        assert [t["turn_id"] for t in stored] == [done[n] for n in numbers], "one stored turn per request"
        for number, turn in zip(numbers, stored, strict=True):
            assert turn["status"] == "completed", turn
            steps = [step["step_type"] for step in turn["steps"]]
            if number % 3 != 2:
                assert steps == ["inference", "tool_execution", "inference"], turn
                assert turn["steps"][1]["tool_responses"][0]["content"] == f"result {number}"
            else:
                assert steps == ["inference"], turn
            kinds = _event_types(survivor, f"{turns}/{turn['turn_id']}/events")
            assert kinds.count("turn_complete") == 1 and kinds[-1] == "turn_complete", kinds
            assert kinds.count("turn_awaiting_input") == (1 if number % 3 != 2 else 0), kinds
