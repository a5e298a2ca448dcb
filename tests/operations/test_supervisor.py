"""serve.py's children never outlive it, and a start never fights what another left: SIGKILLed alone,
its Temporal dev server and API die with it within seconds and the next start on the same data resumes
a paused turn; a start finds its ports held, or its data directory served, and says so in one line;
children an earlier start left behind (recorded in the data directory's pidfile) are stopped first."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from hosting.supervision import PIDFILE, RecordedProcess
from tests.operations.test_serve import ROOT, Service
from tests.support.rest import final_turn

pytestmark = pytest.mark.processes

WEATHER = {
    "name": "get_weather",
    "description": "Weather",
    "parameters": [{"name": "city", "parameter_type": "str", "description": "City"}],
}


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    """serve.py on `tmp_path`, interrupted at the end if a test left it running."""
    running = Service(tmp_path)
    yield running
    if running.process is not None and running.process.poll() is None:
        running.process.send_signal(signal.SIGINT)
        try:
            running.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            running.process.kill()  # its children die with it


def _recorded(data_dir: Path) -> tuple[RecordedProcess, list[RecordedProcess]]:
    recorded = json.loads((data_dir / PIDFILE).read_text())
    return RecordedProcess(**recorded["supervisor"]), [RecordedProcess(**child) for child in recorded["children"]]


def _paused_turn(url: str) -> tuple[str, dict[str, object]]:
    with httpx.Client(base_url=url, timeout=30) as http:
        config = {"model": "offline/echo", "instructions": "Be brief.", "client_tools": [WEATHER]}
        agent_id = http.post("/v1/agents", json={"agent_config": config}).json()["agent_id"]
        session_id = http.post(f"/v1/agents/{agent_id}/session", json={"session_name": "s"}).json()["session_id"]
        turns = f"/v1/agents/{agent_id}/session/{session_id}/turn"
        ask = {"messages": [{"role": "user", "content": 'call tool get_weather {"city": "Oslo"}'}], "stream": True}
        paused = final_turn(http.post(turns, json=ask))
    assert paused["status"] == "awaiting_input"
    return turns, paused


def test_sigkill_of_serve_alone_takes_its_children_and_the_next_start_resumes_the_paused_turn(
    service: Service, tmp_path: Path
) -> None:
    service.start()
    turns, paused = _paused_turn(service.url)
    supervisor, children = _recorded(tmp_path)
    assert supervisor.pid == service.process.pid
    assert sorted(child.name for child in children) == ["API", "Temporal dev server"]
    assert all(child.alive() for child in children)

    os.kill(supervisor.pid, signal.SIGKILL)  # serve.py alone: not its process group, not its children
    service.process.wait(timeout=10)
    deadline = time.monotonic() + 5
    while any(child.alive() for child in children) or service.ports_open():
        assert time.monotonic() < deadline, (
            [child for child in children if child.alive()],
            service.ports_open(),
        )
        time.sleep(0.1)

    # Where children cannot die with serve.py, its pidfile names them: the next start stops them first.
    leftover = subprocess.Popen(["sleep", "600"])
    try:
        recorded = json.loads((tmp_path / PIDFILE).read_text())
        recorded["children"].append(vars(RecordedProcess.of(leftover.pid, "worker")))
        (tmp_path / PIDFILE).write_text(json.dumps(recorded))

        service.start()
        assert leftover.wait(timeout=15) == -signal.SIGTERM
        assert f"stopping what an earlier start left running: worker (pid {leftover.pid})" in service.tail()
    finally:
        if leftover.poll() is None:
            leftover.kill()
    with httpx.Client(base_url=service.url, timeout=30) as http:
        call_id = paused["output_message"]["tool_calls"][0]["call_id"]  # type: ignore[index]
        answer = {"call_id": call_id, "tool_name": "get_weather", "content": "snow"}
        done = http.post(f"{turns}/{paused['turn_id']}/resume", json={"tool_responses": [answer]})
    assert done.status_code == 200, done.text
    assert done.json()["status"] == "completed"
    assert done.json()["output_message"]["content"] == "Tool get_weather returned: snow."

    # A second start on the data directory this one serves is refused, and this one serves on.
    second = _serve_once(service)
    assert second.returncode == 1
    assert second.stderr.strip().splitlines()[-1] == (
        f"serve.py is already running on the data directory {tmp_path} (pid {service.process.pid}); "
        "stop it first, or give this one another DA_DATA_DIR"
    )
    assert httpx.get(f"{service.url}/v1/health", timeout=60).status_code == 200

    assert service.interrupt() == 0
    assert not (tmp_path / PIDFILE).exists()  # a stop that went as planned leaves nothing to clean up


def _serve_once(service: Service) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "serve.py"], cwd=ROOT, env=service.env, capture_output=True, text=True, timeout=60
    )


def test_a_start_whose_port_another_process_holds_says_so_in_one_line_and_exits(service: Service) -> None:
    with socket.create_server(("127.0.0.1", service.api_port)):
        started = time.monotonic()
        finished = _serve_once(service)
        seconds = time.monotonic() - started
        still_open = service.ports_open()

    assert finished.returncode == 1
    assert seconds < 20
    lines = finished.stderr.strip().splitlines()
    assert lines[-1] == (
        f"cannot start: in use by another process: API port 127.0.0.1:{service.api_port} (DA_API_PORT); "
        "stop that process or move the port"
    ), finished.stderr
    assert "started (pid" not in finished.stdout + finished.stderr  # nothing was started
    assert still_open == [service.api_port]  # the holder's only: neither Temporal's nor its UI's was opened


def test_a_child_whose_port_another_process_took_while_it_was_down_stops_serve_with_one_line(
    service: Service, tmp_path: Path
) -> None:
    service.start()
    [api] = [child for child in _recorded(tmp_path)[1] if child.name == "API"]
    os.kill(api.pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while True:  # the port is free the moment the API is gone; serve.py restarts it a second later
        try:
            holder = socket.create_server(("127.0.0.1", service.api_port))
            break
        except OSError:
            assert time.monotonic() < deadline
            time.sleep(0.01)
    with holder:
        assert service.process.wait(timeout=30) == 1
    last = service.tail().splitlines()[-1]
    assert last == (
        f"cannot start: in use by another process: API port 127.0.0.1:{service.api_port} (DA_API_PORT); "
        "stop that process or move the port"
    ), service.tail()
    assert service.ports_open() == []  # its Temporal dev server was stopped on the way out
