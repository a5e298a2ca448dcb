"""What the bench tools share: processes, ports, the agent they create, SSE reading.

They run as `.venv/bin/python -m bench.<name>` from the repository root, so the root is on sys.path and they
import this module as `bench.common`, and the runtime's packages as they are.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

REPO_ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = Path(__file__).resolve().parent
FINAL_EVENT_TYPES = {"turn_complete", "turn_awaiting_input"}

LOOKUP_TOOL: dict[str, Any] = {
    "name": "lookup",
    "description": "Look up",
    "parameters": [{"name": "q", "parameter_type": "str", "description": "query", "required": False}],
}


def log(message: str) -> None:
    """Progress goes to stderr: stdout carries only the one JSON line of results."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def runtime_revision(checkout: Path = REPO_ROOT) -> str:
    """The commit measured, "-dirty" if the work tree differs: figures mean little without it."""
    try:
        described = subprocess.run(
            ["git", "describe", "--always", "--dirty"], cwd=checkout, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return described.stdout.strip() or "unknown"


def free_port() -> int:
    """A loopback port free right now, below the kernel's ephemeral ports (32768 and up on Linux).

    bench.chaos restarts a killed API on its port; a port from bind(0), once released, may meanwhile be
    some outgoing connection's source port, and the restarted API could not bind it."""
    for port in random.sample(range(10000, 32768), 200):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) != 0:
                return port
    raise RuntimeError("no free loopback port in 10000..32767")


def wait_for_port(port: int, process: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args!r} exited with code {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing opened port {port} within {seconds:.0f}s")


def start_dev_server(workdir: Path) -> tuple[subprocess.Popen[bytes], int]:
    """The Temporal dev server as `make run` configures it, headless, on a free port, its files in `workdir`;
    returns it and its port once it listens."""
    import serve
    from configuration.loading import load_settings

    port, ui_port = free_port(), free_port()
    settings = load_settings(
        {"DA_DATA_DIR": str(workdir), "DA_TEMPORAL_PORT": str(port), "DA_TEMPORAL_UI_PORT": str(ui_port)}
    )
    temporal = spawn([*serve.dev_server_command(settings), "--headless"], workdir / "temporal.log", {})
    try:
        wait_for_port(port, temporal, 60)
    except RuntimeError:
        stop_process(temporal)
        raise
    return temporal, port


def wait_for_http(url: str, processes: Sequence[subprocess.Popen[bytes]], seconds: float) -> None:
    """Until `url` answers 200; fails early if one of the processes that should serve it died."""
    deadline = time.monotonic() + seconds
    last_error = "no answer"
    while time.monotonic() < deadline:
        for process in processes:
            if process.poll() is not None:
                raise RuntimeError(f"{process.args!r} exited with code {process.returncode}")
        try:
            response = httpx.get(url, timeout=2)
            if response.status_code == 200:
                return
            last_error = f"HTTP {response.status_code}: {response.text[:200]}"
        except httpx.HTTPError as error:
            last_error = repr(error)
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {seconds:.0f}s ({last_error})")


def stop_process(process: subprocess.Popen[bytes], signum: int = signal.SIGINT, seconds: float = 30) -> None:
    """Ask politely, then kill: every process a script starts must be gone when it exits."""
    if process.poll() is None:
        process.send_signal(signum)
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def child_env(extra: dict[str, str]) -> dict[str, str]:
    """Our environment minus any DA_*/TEMPORAL_* setting that could point a child elsewhere, plus `extra`."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("DA_", "TEMPORAL_"))}
    return {**kept, **extra}


def spawn(
    command: list[str], log_path: Path, env: dict[str, str] | None = None, cwd: Path = REPO_ROOT
) -> subprocess.Popen[bytes]:
    """A child in its own session (so a Ctrl-C at the terminal reaches only us), logging to a file. `cwd`:
    the checkout whose code it runs (its modules come before the installed project's)."""
    with log_path.open("ab") as output:
        return subprocess.Popen(
            command,
            cwd=cwd,
            env=child_env(env or {}),
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


@dataclass
class ModelServer:
    process: subprocess.Popen[bytes]
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def start_model_server(ttft_ms: float, token_ms: float, log_path: Path) -> ModelServer:
    """bench/model_server.py in its own process, so its work does not share our GIL."""
    port = free_port()
    script = str(BENCH_DIR / "model_server.py")
    command = [sys.executable, script, "--port", str(port), "--ttft-ms", str(ttft_ms), "--token-ms", str(token_ms)]
    server = ModelServer(spawn(command, log_path), port)
    wait_for_http(f"{server.url}/health", [server.process], 30)
    return server


def models_env(models: dict[str, ModelServer]) -> str:
    """DA_MODELS for the runtime: each model id served by one of our model servers."""
    return json.dumps({name: {"provider": "openai", "base_url": f"{s.url}/v1"} for name, s in models.items()})


def agent_config(model: str) -> dict[str, Any]:
    return {"model": model, "instructions": "Be brief.", "client_tools": [LOOKUP_TOOL], "max_infer_iters": 5}


def payload_of(data: dict[str, Any]) -> dict[str, Any]:
    return data.get("event", {}).get("payload", {}) if isinstance(data.get("event"), dict) else {}


def event_type(data: dict[str, Any]) -> str | None:
    return payload_of(data).get("event_type")


def is_final(data: dict[str, Any]) -> bool:
    return "error" in data or event_type(data) in FINAL_EVENT_TYPES


def is_text_delta(data: dict[str, Any]) -> bool:
    payload = payload_of(data)
    return payload.get("event_type") == "step_progress" and payload.get("delta", {}).get("type") == "text"


@dataclass
class SseEvent:
    event_id: int | None
    data: dict[str, Any]
    received_at: float
    """time.monotonic() when the event's last line was read."""


async def iter_sse(response: httpx.Response) -> AsyncIterator[SseEvent]:
    """The events of an SSE body: `id:` and `data:` lines, dispatched on a blank line; comments skipped."""
    event_id: int | None = None
    data_lines: list[str] = []
    async for line in response.aiter_lines():
        if line.startswith("id:"):
            event_id = int(line[3:].strip())
        elif line.startswith("data:"):
            data_lines.append(line[5:].lstrip())
        elif not line and data_lines:
            yield SseEvent(event_id, json.loads("\n".join(data_lines)), time.monotonic())
            event_id, data_lines = None, []


class HttpStatusError(Exception):
    """The API answered with a status other than 200."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body[:300]}")
        self.status = status


async def json_request(client: httpx.AsyncClient, method: str, url: str, body: Any = None) -> Any:
    response = await client.request(method, url, json=body)
    if response.status_code != 200:
        raise HttpStatusError(response.status_code, response.text)
    return response.json()


async def create_agent(client: httpx.AsyncClient, model: str) -> str:
    created = await json_request(client, "POST", "/v1/agents", {"agent_config": agent_config(model)})
    return str(created["agent_id"])


async def create_session(client: httpx.AsyncClient, agent_id: str, name: str) -> str:
    body = {"session_name": name}
    return str((await json_request(client, "POST", f"/v1/agents/{agent_id}/session", body))["session_id"])


def turn_path(agent_id: str, session_id: str) -> str:
    return f"/v1/agents/{agent_id}/session/{session_id}/turn"


def tool_responses_for(turn: dict[str, Any], content: str = "42") -> list[dict[str, Any]]:
    """One response per tool call the paused turn waits for."""
    calls = (turn.get("output_message") or {}).get("tool_calls") or []
    return [{"call_id": c["call_id"], "tool_name": c["tool_name"], "content": content} for c in calls]


def percentiles_ms(seconds: Sequence[float]) -> dict[str, float | int | None]:
    """p50/p95 in milliseconds, interpolated between ranks; None when nothing was measured."""
    if not seconds:
        return {"p50": None, "p95": None, "n": 0}
    values = sorted(s * 1000 for s in seconds)
    if len(values) == 1:
        return {"p50": round(values[0], 1), "p95": round(values[0], 1), "n": 1}
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return {"p50": round(cuts[49], 1), "p95": round(cuts[94], 1), "n": len(values)}
