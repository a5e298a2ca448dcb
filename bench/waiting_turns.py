"""The cost of waiting: many turns paused on client tools at once; prints one JSON line per level.

    .venv/bin/python -m bench.waiting_turns [--levels 10,1000,10000] [--samples 30] [--concurrency 4]
                                            [--env DA_MAX_CACHED_WORKFLOWS=1000 ...]

`make run`'s stack (serve.py: the Temporal dev server, and the API with its worker in process, on SQLite) in a
temporary directory, with the offline model. The turns paused are half llama-stack turns answered
`awaiting_input` (one session each, a thousand sessions an agent) and half Responses answered with a
function call, whose workflow waits for the call's output. At each level of waiting turns (cumulative), once
reached, it measures:

- `rss_mb`: the resident memory of each process of the stack (serve.py the supervisor, the API that runs the
  turns, the dev server);
- `resume_ms`: resuming one waiting turn picked at random, until it has completed (half of each dialect),
  one at a time: what a client sees when it answers a turn that has waited among the others;
- `create_and_pause_ms`: creating one turn until it is paused, one at a time (these replace the resumed
  turns, so the level holds).

The filling itself runs `--concurrency` requests at once and is not timed. `--env` passes a setting to the
stack (e.g. `DA_MAX_CACHED_WORKFLOWS`), to compare.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from temporalio.client import Client

from bench.benchmark.stack import serve_children
from bench.common import (
    create_agent,
    create_session,
    free_port,
    json_request,
    log,
    percentiles_ms,
    runtime_revision,
    spawn,
    stop_process,
    tool_responses_for,
    turn_path,
    wait_for_http,
)

MODEL = "offline/echo"
CALL_TOOL = 'call tool lookup {"q": "weather"}'
SESSIONS_PER_AGENT = 1000
RESPONSES_TOOLS = [
    {
        "type": "function",
        "name": "lookup",
        "description": "Look up",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    }
]


@dataclass
class Waiting:
    """A paused turn and what resuming it needs."""

    dialect: str
    ids: dict[str, Any]


@dataclass
class Workload:
    client: httpx.AsyncClient
    agents: list[str] = field(default_factory=list)
    sessions_made: int = 0
    waiting: list[Waiting] = field(default_factory=list)

    async def _session(self) -> tuple[str, str]:
        if self.sessions_made % SESSIONS_PER_AGENT == 0:
            self.agents.append(await create_agent(self.client, MODEL))
        self.sessions_made += 1
        agent_id = self.agents[-1]
        return agent_id, await create_session(self.client, agent_id, f"waiting-{self.sessions_made}")

    async def pause_llama_stack(self) -> Waiting:
        agent_id, session_id = await self._session()
        body = {"messages": [{"role": "user", "content": CALL_TOOL}], "stream": False}
        turn = await json_request(self.client, "POST", turn_path(agent_id, session_id), body)
        if not tool_responses_for(turn):
            raise RuntimeError(f"the turn did not pause on its client tool: {json.dumps(turn)[:300]}")
        return Waiting("llama_stack", {"agent_id": agent_id, "session_id": session_id, "turn": turn})

    async def pause_response(self) -> Waiting:
        body = {"model": MODEL, "input": CALL_TOOL, "tools": RESPONSES_TOOLS}
        response = await json_request(self.client, "POST", "/v1/responses", body)
        calls = [item for item in response["output"] if item["type"] == "function_call"]
        if not calls:
            raise RuntimeError(f"the response made no function call: {json.dumps(response)[:300]}")
        return Waiting("responses", {"response_id": response["id"], "call_id": calls[0]["call_id"]})

    async def pause(self, dialect: str) -> Waiting:
        return await (self.pause_llama_stack() if dialect == "llama_stack" else self.pause_response())

    async def resume(self, waiting: Waiting) -> None:
        if waiting.dialect == "llama_stack":
            ids, turn = waiting.ids, waiting.ids["turn"]
            path = f"{turn_path(ids['agent_id'], ids['session_id'])}/{turn['turn_id']}/resume"
            body = {"tool_responses": tool_responses_for(turn), "stream": False}
            resumed = await json_request(self.client, "POST", path, body)
            done = (resumed.get("output_message") or {}).get("content", "")
        else:
            output = {"type": "function_call_output", "call_id": waiting.ids["call_id"], "output": "sunny"}
            body = {
                "model": MODEL,
                "previous_response_id": waiting.ids["response_id"],
                "input": [output],
                "tools": RESPONSES_TOOLS,
            }
            resumed = await json_request(self.client, "POST", "/v1/responses", body)
            done = resumed["output"][-1]["content"][0]["text"] if resumed.get("status") == "completed" else ""
        if "returned" not in str(done):
            raise RuntimeError(f"the resumed turn did not complete with the tool's result: {json.dumps(resumed)[:300]}")

    async def fill(self, target: int, concurrency: int) -> None:
        """Pause turns, alternately of each dialect, until `target` wait."""
        dialects = iter(["llama_stack", "responses"] * target)
        missing = target - len(self.waiting)
        lock = asyncio.Lock()
        progress = {"done": 0}

        async def one_client(count: int) -> None:
            for _ in range(count):
                async with lock:
                    dialect = next(dialects)
                self.waiting.append(await self.pause(dialect))
                progress["done"] += 1
                if progress["done"] % 500 == 0:
                    log(f"  {len(self.waiting)} waiting")

        shares = [missing // concurrency + (1 if i < missing % concurrency else 0) for i in range(concurrency)]
        await asyncio.gather(*(one_client(share) for share in shares if share))

    async def measure(self, samples: int, rng: random.Random) -> dict[str, Any]:
        """Resume random waiting turns one by one, then pause as many new ones one by one (the level holds)."""
        resumed: dict[str, list[float]] = {"llama_stack": [], "responses": []}
        for dialect in ("llama_stack", "responses"):
            candidates = [index for index, w in enumerate(self.waiting) if w.dialect == dialect]
            for index in sorted(rng.sample(candidates, min(samples // 2, len(candidates))), reverse=True):
                waiting = self.waiting.pop(index)
                started = time.perf_counter()
                await self.resume(waiting)
                resumed[dialect].append(time.perf_counter() - started)
        created: list[float] = []
        for dialect in ["llama_stack", "responses"] * (sum(len(v) for v in resumed.values()) // 2):
            started = time.perf_counter()
            self.waiting.append(await self.pause(dialect))
            created.append(time.perf_counter() - started)
        return {
            "resume_ms": percentiles_ms(resumed["llama_stack"] + resumed["responses"]),
            "resume_ms_by_dialect": {dialect: percentiles_ms(times) for dialect, times in resumed.items()},
            "create_and_pause_ms": percentiles_ms(created),
        }


def rss_mb(pids: dict[str, int]) -> dict[str, float]:
    """VmRSS of each process, in MB."""
    found = {}
    for role, pid in pids.items():
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        kilobytes = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
        found[role] = round(kilobytes / 1024, 1)
    return found


def machine() -> dict[str, Any]:
    with open("/proc/loadavg") as loadavg:
        load = [float(x) for x in loadavg.read().split()[:3]]
    return {"nproc": os.cpu_count(), "load": load}


async def open_turn_workflows(temporal_port: int) -> int:
    client = await Client.connect(f"127.0.0.1:{temporal_port}")
    counted = await client.count_workflows("WorkflowType = 'AgentTurn' AND ExecutionStatus = 'Running'")
    return counted.count


async def run(args: argparse.Namespace, workdir: Path) -> None:
    api_port, temporal_port, ui_port = free_port(), free_port(), free_port()
    env = {
        "DA_DATA_DIR": str(workdir / "data"),
        "DA_API_PORT": str(api_port),
        "DA_TEMPORAL_PORT": str(temporal_port),
        "DA_TEMPORAL_UI_PORT": str(ui_port),
        "DA_RATE_LIMIT_PER_MINUTE": "0",
        **dict(setting.split("=", 1) for setting in args.env),
    }
    base_url = f"http://127.0.0.1:{api_port}"
    log(f"starting serve.py: API {base_url}, Temporal 127.0.0.1:{temporal_port} (logs in {workdir})")
    serve = spawn([sys.executable, "serve.py"], workdir / "serve.log", env)
    try:
        wait_for_http(f"{base_url}/v1/health", [serve], 180)
        pids = {"supervisor": serve.pid, **serve_children(serve.pid)}
        rng = random.Random(7)
        timeout = httpx.Timeout(120.0, connect=10.0)
        limits = httpx.Limits(max_connections=args.concurrency + 2)
        async with httpx.AsyncClient(base_url=base_url, timeout=timeout, limits=limits) as client:
            workload = Workload(client)
            for level in args.levels:
                started = time.monotonic()
                log(f"pausing turns until {level} wait")
                await workload.fill(level, args.concurrency)
                fill_seconds = time.monotonic() - started
                rss_filled = rss_mb(pids)
                figures = await workload.measure(args.samples, rng)
                report = {
                    "benchmark": "waiting_turns",
                    "waiting": len(workload.waiting),
                    "open_turn_workflows": await open_turn_workflows(temporal_port),
                    "rss_mb": rss_mb(pids),
                    "rss_mb_when_filled": rss_filled,
                    **figures,
                    "fill_seconds": round(fill_seconds, 1),
                    "settings": dict(setting.split("=", 1) for setting in args.env),
                    "revision": runtime_revision(),
                    **machine(),
                }
                print(json.dumps(report), flush=True)
    finally:
        stop_process(serve, signal.SIGINT, 60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", default="10,1000,10000", help="waiting turns to reach, in order")
    parser.add_argument("--samples", type=int, default=30, help="turns resumed and created, one by one, a level")
    parser.add_argument("--concurrency", type=int, default=4, help="requests at once while filling")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE setting for the stack")
    args = parser.parse_args()
    args.levels = [int(level) for level in args.levels.split(",")]
    with tempfile.TemporaryDirectory(prefix="waiting-turns-") as workdir:
        asyncio.run(run(args, Path(workdir)))


if __name__ == "__main__":
    main()
