"""`python serve.py` — the README's run command — brings up Temporal and the API running the turns (or
a separate worker), and Ctrl-C stops them all. A turn paused before a restart of the whole service
resumes after it. The process running a turn, killed mid-turn, is restarted by serve.py and the turn
completes."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing, suppress
from pathlib import Path
from typing import Any

import httpx
import pytest

from store.upgrade import head_revision
from tests.support.rest import create_agent, create_session, final_turn
from tests.support.scripted_model import ScriptedModel, ThreadedServer, text
from tests.support.stack import SCRIPTED_KEY, SCRIPTED_KEY_ENV, SCRIPTED_MODEL, free_port

pytestmark = pytest.mark.processes

ROOT = Path(__file__).resolve().parents[2]


class Service:
    def __init__(self, data_dir: Path) -> None:
        self.api_port, self.temporal_port, self.ui_port = free_port(), free_port(), free_port()
        self.env = {
            **os.environ,
            "DA_DATA_DIR": str(data_dir),
            "DA_API_PORT": str(self.api_port),
            "DA_TEMPORAL_PORT": str(self.temporal_port),
            "DA_TEMPORAL_UI_PORT": str(self.ui_port),
        }
        self.env.pop("TEMPORAL_ADDRESS", None)
        self.process: subprocess.Popen[bytes] | None = None
        self.log = data_dir / "serve.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "serve.py"], cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"serve.py exited during start-up:\n{self.tail()}"
            try:
                if httpx.get(f"{self.url}/v1/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        raise AssertionError(f"the service did not become healthy within 90 s:\n{self.tail()}")

    def tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-40:])

    def interrupt(self) -> int:
        assert self.process is not None
        self.process.send_signal(signal.SIGINT)
        return self.process.wait(timeout=60)

    def ports_open(self) -> list[int]:
        open_ports = []
        for port in (self.api_port, self.temporal_port, self.ui_port):
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    open_ports.append(port)
        return open_ports


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    running = Service(tmp_path)
    yield running
    if running.process and running.process.poll() is None:
        # As Ctrl-C does: serve.py stops its children (each in a session of its own) before it exits.
        # Killed, it would leave them running after a failed test.
        try:
            running.interrupt()
        except subprocess.TimeoutExpired:
            running.process.kill()


def test_quickstart_then_ctrl_c_then_resume_after_restart(service: Service, tmp_path: Path) -> None:
    service.start()
    with closing(sqlite3.connect(tmp_path / "store.db")) as store:
        assert store.execute("SELECT version_num FROM alembic_version").fetchall() == [(head_revision(),)]
    with httpx.Client(base_url=service.url, timeout=30) as http:
        tool = {
            "name": "get_weather",
            "description": "Weather",
            "parameters": [{"name": "city", "parameter_type": "str", "description": "City"}],
        }
        config = {"model": "offline/echo", "instructions": "Be brief.", "client_tools": [tool]}
        agent_id = http.post("/v1/agents", json={"agent_config": config}).json()["agent_id"]
        session_id = http.post(f"/v1/agents/{agent_id}/session", json={"session_name": "demo"}).json()["session_id"]
        turns = f"/v1/agents/{agent_id}/session/{session_id}/turn"
        ask = {"messages": [{"role": "user", "content": 'call tool get_weather {"city": "Paris"}'}], "stream": True}
        # MCP credentials for the turn need DA_CREDENTIALS_KEY: serve.py generated one, for its owner only.
        credentials = {"mcp_headers": {"https://mcp.example/mcp": {"Authorization": "Bearer t0ken"}}}
        provider_data = {"X-LlamaStack-Provider-Data": json.dumps(credentials)}
        paused = final_turn(http.post(turns, json=ask, headers=provider_data))
    assert paused["status"] == "awaiting_input"
    key_file = tmp_path / "credentials.key"
    key = key_file.read_text()
    assert key_file.stat().st_mode & 0o777 == 0o600
    # Without API keys there is one tenant, and the service says so as it starts.
    assert "every caller is tenant 'default'" in service.tail()

    assert service.interrupt() == 0
    assert service.ports_open() == []

    service.start()
    with httpx.Client(base_url=service.url, timeout=30) as http:
        call_id = paused["output_message"]["tool_calls"][0]["call_id"]
        answer = {"call_id": call_id, "tool_name": "get_weather", "content": "sunny"}
        done = http.post(f"{turns}/{paused['turn_id']}/resume", json={"tool_responses": [answer]})
    assert done.status_code == 200, done.text
    assert done.json()["output_message"]["content"] == "Tool get_weather returned: sunny."
    assert key_file.read_text() == key
    assert [s["step_type"] for s in done.json()["steps"]] == ["inference", "tool_execution", "inference"]
    assert service.interrupt() == 0


def _started_pids(service: Service, child: str) -> list[int]:
    """Every pid serve.py said it started `child` ("API", "worker") with, in order."""
    log = service.log.read_text(errors="replace")
    return [int(pid) for pid in re.findall(rf"{child} started \(pid (\d+)\)", log)]


def _running_child(service: Service, command_part: bytes) -> int:
    """The pid of serve.py's child whose command line has `command_part`, read from /proc."""
    assert service.process is not None
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            command = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if parent == service.process.pid and any(command_part in part for part in command):
            return int(stat.parent.name)
    raise AssertionError(f"serve.py runs no {command_part.decode()}:\n{service.tail()}")


def _completed_turns(http: httpx.Client, agent_id: str, session_id: str) -> list[dict[str, Any]]:
    """The session's turns once its first has completed, read from whichever API answers (serve.py may
    still be restarting it)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with suppress(httpx.TransportError):
            response = http.get(f"/v1/agents/{agent_id}/session/{session_id}")
            response.raise_for_status()
            if (turns := response.json()["turns"]) and turns[0]["status"] == "completed":
                return turns
        time.sleep(0.25)
    raise AssertionError("the turn did not complete within 120 s of the kill")


@pytest.mark.parametrize(
    ("worker_in_api", "child", "command_part"),
    [(None, "API", b"uvicorn"), ("false", "worker", b"worker.py")],
    ids=["the API running its worker (the default)", "a separate worker.py"],
)
def test_the_process_running_a_turn_killed_mid_turn_is_restarted_and_the_turn_completes(
    service: Service, worker_in_api: str | None, child: str, command_part: bytes
) -> None:
    model = ScriptedModel()
    model_server = ThreadedServer(model.app(), free_port()).start()
    try:
        service.env[SCRIPTED_KEY_ENV] = SCRIPTED_KEY
        service.env["DA_MODELS"] = json.dumps(
            {
                SCRIPTED_MODEL: {
                    "provider": "openai",
                    "base_url": f"{model_server.url}/v1",
                    "api_key_env": SCRIPTED_KEY_ENV,
                }
            }
        )
        if worker_in_api is not None:
            service.env["DA_WORKER_IN_API"] = worker_in_api
        model.script(text("lost with the worker", delay_seconds=3), text("after the restart"))
        service.start()
        first = _running_child(service, command_part)
        assert _started_pids(service, "worker") == ([] if worker_in_api is None else [first])
        answers: list[httpx.Response] = []

        def ask(http: httpx.Client, turns: str) -> None:
            # When the API runs the turn, the request dies with it; the turn does not.
            with suppress(httpx.TransportError):
                answers.append(http.post(turns, json={"messages": [{"role": "user", "content": "hi"}]}))

        with httpx.Client(base_url=service.url, timeout=120) as http:
            agent_id = create_agent(http)
            session_id = create_session(http, agent_id)
            asking = threading.Thread(target=ask, args=(http, f"/v1/agents/{agent_id}/session/{session_id}/turn"))
            asking.start()
            deadline = time.monotonic() + 60
            while not model.requests:
                assert time.monotonic() < deadline, "the model was never called"
                time.sleep(0.05)
            os.kill(first, signal.SIGKILL)
            asking.join(timeout=120)
            assert [answer.status_code for answer in answers] == ([] if worker_in_api is None else [200])
            turn = _completed_turns(http, agent_id, session_id)[0]

        assert turn["output_message"]["content"] == "after the restart "
        assert [s["step_type"] for s in turn["steps"]] == ["inference"]
        assert len(model.requests) == 2
        log = service.log.read_text(errors="replace")
        assert f"{child} (pid {first}) exited with code -9" in log, service.tail()
        assert _started_pids(service, child) == [first, _running_child(service, command_part)]
        assert service.interrupt() == 0
        assert service.ports_open() == []
    finally:
        model_server.stop()
