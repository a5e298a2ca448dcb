"""Write the data directory of an earlier release, for the upgrade tests (tests/durability/test_release_upgrades.py).

    .venv/bin/python -m tests.support.make_release_data 33a2132 fb3f566 f3b78a4

For each commit: its tree is exported (`git archive`) into a scratch directory and installed into a
virtual environment of its own; its `serve.py` (what `make run` ran then) starts on an empty data
directory; through its API an agent with a client tool gets a session, a completed turn, and a turn
paused on the client tool (its workflow waiting in the Temporal dev server's database) — and, in each
OpenAI dialect the release serves, a turn paused the same way: a response that called a function tool, an
Agents API session waiting for the caller's tool result; then it is stopped with Ctrl-C, as a user would,
and the data directory is archived as `tests/durability/releases/<commit>.tar.xz`, with `manifest.json`
naming what was made. The built-in offline model answers, so the release needs no network, and neither
does the test.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx

from tests.support.processes import EVENT_SECONDS, wait_until
from tests.support.stack import free_port

ROOT = Path(__file__).resolve().parents[2]
RELEASES = Path(__file__).resolve().parents[1] / "durability" / "releases"
ARCHIVED = ("temporal.db", "store.db", "credentials.key")
"""What a data directory holds that a later release reads (the credentials key since it existed); the
wake/ sockets are made afresh."""
WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Weather in a city",
    "parameters": [{"name": "city", "parameter_type": "str", "description": "City"}],
}
PAUSING_QUESTION = 'call tool get_weather {"city": "Paris"}'
"""The offline model calls the named client tool with these arguments (providers/offline.py)."""
WEATHER_FUNCTION = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
"""The same tool as the OpenAI dialects spell it."""
FORECAST_FUNCTION = {**WEATHER_FUNCTION, "name": "get_forecast", "description": "Forecast for a city"}
"""The Agents API session's tool: its call gets an id of its own (the offline model's ids are made of the tool's
name), as a real model's would; a response's continuation finds the paused turn it answers by that id."""
AGENTS_BETA = {"OpenAI-Beta": "agents=v1"}


def _run(command: list[str], cwd: Path) -> None:
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL)


def install(commit: str, scratch: Path) -> Path:
    """The commit's tree in `scratch`/tree, installed into `scratch`/venv (kept from an earlier run
    with the same `scratch`); the venv's Python."""
    tree = scratch / "tree"
    python = scratch / "venv" / "bin" / "python"
    if python.exists():
        return python
    tree.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    _run([sys.executable, "-m", "venv", str(scratch / "venv")], tree)
    _run([str(python), "-m", "pip", "install", "--quiet", "-e", "."], tree)
    return python


def _final_turn(response: httpx.Response) -> dict[str, Any]:
    events = [line.removeprefix("data: ") for line in response.text.splitlines() if line.startswith("data: ")]
    return json.loads(events[-1])["event"]["payload"]["turn"]


def record_turns(url: str) -> dict[str, Any]:
    """An agent, its session, a completed turn and a turn paused on the client tool: their ids."""
    with httpx.Client(base_url=url, timeout=60) as http:
        config = {"model": "offline/echo", "instructions": "Be brief.", "client_tools": [WEATHER_TOOL]}
        agent_id = http.post("/v1/agents", json={"agent_config": config}).raise_for_status().json()["agent_id"]
        session = http.post(f"/v1/agents/{agent_id}/session", json={"session_name": "before the upgrade"})
        session_id = session.raise_for_status().json()["session_id"]
        turns = f"/v1/agents/{agent_id}/session/{session_id}/turn"
        completed = http.post(turns, json={"messages": [{"role": "user", "content": "hello"}], "stream": True})
        done = _final_turn(completed.raise_for_status())
        asked = {"messages": [{"role": "user", "content": PAUSING_QUESTION}], "stream": True}
        paused = _final_turn(http.post(turns, json=asked).raise_for_status())
    assert done["status"] == "completed", done
    assert paused["status"] == "awaiting_input", paused
    [call] = paused["output_message"]["tool_calls"]
    return {
        "agent_id": agent_id,
        "session_id": session_id,
        "completed_turn": {"turn_id": done["turn_id"], "output": done["output_message"]["content"]},
        "paused_turn": {"turn_id": paused["turn_id"], "call_id": call["call_id"], "tool_name": call["tool_name"]},
    }


def served_paths(url: str) -> set[str]:
    """The paths of the release's OpenAPI document: which dialects it speaks."""
    return set(httpx.get(f"{url}/openapi.json", timeout=60).raise_for_status().json()["paths"])


def record_paused_response(url: str) -> dict[str, Any]:
    """A Responses response that called a function tool: its turn's workflow waits for the output."""
    asked = {"model": "offline/echo", "input": PAUSING_QUESTION, "tools": [WEATHER_FUNCTION]}
    response = httpx.post(f"{url}/v1/responses", json=asked, timeout=60).raise_for_status().json()
    [call] = response["output"]
    assert response["status"] == "completed" and call["type"] == "function_call", response
    return {"response_id": response["id"], "call_id": call["call_id"], "name": call["name"]}


def record_paused_session(url: str) -> dict[str, Any]:
    """An Agents API session whose first turn waits for the caller's result of a function call."""
    agent = {"model": "offline/echo", "tools": [FORECAST_FUNCTION]}
    asked = 'call tool get_forecast {"city": "Paris"}'
    created = {"environment": {"type": "none"}, "agent": agent, "input": asked}
    with httpx.Client(base_url=url, headers=AGENTS_BETA, timeout=60) as http:
        session_id = http.post("/v1/agents/sessions", json=created).raise_for_status().json()["id"]

        def requiring_action() -> dict[str, Any] | None:
            session = http.get(f"/v1/agents/sessions/{session_id}").raise_for_status().json()
            return session if session["status"] == "requires_action" else None

        [action] = wait_until(requiring_action, "the session's pause", EVENT_SECONDS)["required_actions"]
    return {
        "session_id": session_id,
        "turn_id": action["turn_id"],
        "call_id": action["call_id"],
        "name": action["name"],
    }


def record_dialect_pauses(url: str) -> dict[str, Any]:
    """A paused turn of each OpenAI dialect the release serves (none before the Responses dialect)."""
    paths, recorded = served_paths(url), {}
    if "/v1/responses" in paths:
        recorded["paused_response"] = record_paused_response(url)
    if "/v1/agents/sessions" in paths:
        recorded["paused_agents_session"] = record_paused_session(url)
    return recorded


def run_release(python: Path, tree: Path, data_dir: Path) -> dict[str, Any]:
    """Start the release's serve.py on `data_dir`, record the turns, stop it with Ctrl-C."""
    api_port = free_port()
    env = {
        **{name: value for name, value in os.environ.items() if not name.startswith(("DA_", "TEMPORAL_"))},
        "DA_DATA_DIR": str(data_dir),
        "DA_API_PORT": str(api_port),
        "DA_TEMPORAL_PORT": str(free_port()),
        "DA_TEMPORAL_UI_PORT": str(free_port()),
    }
    log = (data_dir.parent / "serve.log").open("wb")
    serve = subprocess.Popen([str(python), "serve.py"], cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{api_port}"
        deadline = time.monotonic() + 120
        while True:
            assert serve.poll() is None and time.monotonic() < deadline, "the release's serve.py did not come up"
            try:
                if httpx.get(f"{url}/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.25)
        return {**record_turns(url), **record_dialect_pauses(url)}
    finally:
        serve.send_signal(signal.SIGINT)
        serve.wait(timeout=60)
        log.close()


def archive(commit: str, data_dir: Path, manifest: dict[str, Any]) -> Path:
    """The data directory's files as one small archive: SQLite files checkpointed, WALs folded in."""
    for database in ("temporal.db", "store.db"):
        with closing(sqlite3.connect(data_dir / database)) as connection:
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            connection.execute("VACUUM")
    (data_dir / "manifest.json").write_text(json.dumps({"commit": commit, **manifest}, indent=2) + "\n")
    RELEASES.mkdir(exist_ok=True)
    target = RELEASES / f"{commit}.tar.xz"
    with tarfile.open(target, "w:xz", preset=9) as tar:
        for name in (*ARCHIVED, "manifest.json"):
            if (data_dir / name).exists():
                tar.add(data_dir / name, arcname=name)
    return target


def make(commit: str, installs: Path) -> Path:
    python = install(commit, installs / commit)
    with tempfile.TemporaryDirectory(prefix=f"release-{commit}-") as scratch:
        data_dir = Path(scratch) / "data"
        data_dir.mkdir()
        manifest = run_release(python, installs / commit / "tree", data_dir)
        return archive(commit, data_dir, manifest)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("commits", nargs="+", help="commits (releases) whose data directories to write")
    parser.add_argument(
        "--installs",
        type=Path,
        default=Path(tempfile.gettempdir()) / "durable-agents-releases",
        help="where each commit's tree and virtual environment are made, and found again by the next run",
    )
    arguments = parser.parse_args()
    for commit in arguments.commits:
        target = make(commit, arguments.installs)
        print(f"{commit}: {target.relative_to(ROOT)} ({target.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
