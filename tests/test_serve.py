"""`python serve.py` — the README's run command — brings up Temporal, worker and API, and Ctrl-C stops
all three. A turn paused before a restart of the whole service resumes after it."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import httpx
import pytest

from store.upgrade import head_revision
from tests.rest import final_turn
from tests.stack import free_port

ROOT = Path(__file__).resolve().parent.parent


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
        raise AssertionError("the service did not become healthy within 90 s")

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
        paused = final_turn(http.post(turns, json=ask))
    assert paused["status"] == "awaiting_input"

    assert service.interrupt() == 0
    assert service.ports_open() == []

    service.start()
    with httpx.Client(base_url=service.url, timeout=30) as http:
        call_id = paused["output_message"]["tool_calls"][0]["call_id"]
        answer = {"call_id": call_id, "tool_name": "get_weather", "content": "sunny"}
        done = http.post(f"{turns}/{paused['turn_id']}/resume", json={"tool_responses": [answer]})
    assert done.status_code == 200, done.text
    assert done.json()["output_message"]["content"] == "Tool get_weather returned: sunny."
    assert [s["step_type"] for s in done.json()["steps"]] == ["inference", "tool_execution", "inference"]
    assert service.interrupt() == 0
