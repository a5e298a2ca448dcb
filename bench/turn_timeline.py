"""Where a simple streamed turn's time goes: the client's view against its workflow's history.

    .venv/bin/python -m bench.turn_timeline [--turns 10] [--responses | --responses-streamed]

Starts serve.py's embedded stack and a zero-latency model server (as bench.benchmark does), runs
`--turns` simple streamed turns one after another, and for each lines up, in milliseconds from
the client's POST: the workflow's history events (the server's clock, which is this machine's),
the model server's receipt of the request, and the client's first and final SSE events. Prints
one JSON line with the median of each mark and the median gap between consecutive marks.
`--responses` times non-streamed `POST /v1/responses` instead, `--responses-streamed` streamed ones.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from functools import partial
from pathlib import Path
from typing import Any

import httpx
from temporalio.client import Client

from api.openai.responses.create import turn_id_of
from bench.benchmark.stack import FAST_MODEL, REQUEST_TIMEOUT, EmbeddedStack
from bench.benchmark.turns import expect_final, stream_until_final, user_turn
from bench.common import create_agent, create_session, iter_sse, log, turn_path
from workflows.contracts import turn_workflow_id


async def one_turn(http: httpx.AsyncClient, temporal: Client, agent_id: str, model_url: str) -> dict[str, float]:
    session_id = await create_session(http, agent_id, "timeline")
    marker = f"probe-{uuid.uuid4().hex}"
    posted_wall, posted = time.time(), time.monotonic()
    result = await stream_until_final(http, turn_path(agent_id, session_id), user_turn(f"Say it. {marker}"))
    done = time.monotonic()
    turn = expect_final(result, "turn_complete")
    marks: dict[str, float] = {"client: final event": (done - posted) * 1000}
    records = (await http.get(f"{model_url}/bench/requests", params={"contains": marker})).json()["requests"]
    marks["model: request received"] = (records[0]["received_at"] - posted) * 1000
    if result.first_text_at is not None:
        marks["client: first text delta"] = (result.first_text_at - posted) * 1000
    seen: dict[str, int] = {}
    async for event in temporal.get_workflow_handle(turn_workflow_id(turn["turn_id"])).fetch_history_events():
        name = (event.WhichOneof("attributes") or "").removesuffix("_event_attributes")
        seen[name] = seen.get(name, 0) + 1
        label = f"temporal: {name} #{seen[name]}"
        marks[label] = (event.event_time.ToDatetime().timestamp() - posted_wall) * 1000
    return marks


async def one_response(http: httpx.AsyncClient, temporal: Client, model_url: str, stream: bool) -> dict[str, float]:
    marker = f"probe-{uuid.uuid4().hex}"
    body = {"model": FAST_MODEL, "input": f"Say it. {marker}", "stream": stream}
    posted_wall, posted = time.time(), time.monotonic()
    marks: dict[str, float] = {}
    if stream:
        async with http.stream("POST", "/v1/responses", json=body) as response:
            async for event in iter_sse(response):
                kind = event.data.get("type")
                if kind == "response.output_text.delta" and "client: first text delta" not in marks:
                    marks["client: first text delta"] = (time.monotonic() - posted) * 1000
                if kind == "response.completed":
                    made = event.data["response"]
                    break
    else:
        made = (await http.post("/v1/responses", json=body)).json()
    marks["client: final event"] = (time.monotonic() - posted) * 1000
    if made.get("status") != "completed":
        raise RuntimeError(f"response {made.get('id')} is {made.get('status')}")
    records = (await http.get(f"{model_url}/bench/requests", params={"contains": marker})).json()["requests"]
    marks["model: request received"] = (records[0]["received_at"] - posted) * 1000
    turn_id = turn_id_of(made["id"])
    seen: dict[str, int] = {}
    async for history in temporal.get_workflow_handle(turn_workflow_id(turn_id)).fetch_history_events():
        name = (history.WhichOneof("attributes") or "").removesuffix("_event_attributes")
        seen[name] = seen.get(name, 0) + 1
        marks[f"temporal: {name} #{seen[name]}"] = (history.event_time.ToDatetime().timestamp() - posted_wall) * 1000
    return marks


async def measure(stack: EmbeddedStack, turns: int, responses: str | None) -> dict[str, Any]:
    assert stack.fast is not None
    temporal = await Client.connect(stack.temporal_address)
    model_url = stack.fast.url
    async with httpx.AsyncClient(base_url=stack.api_url, timeout=REQUEST_TIMEOUT) as http:
        if responses is None:
            agent_id = await create_agent(http, FAST_MODEL)
            probe = partial(one_turn, http, temporal, agent_id, model_url)
        else:
            probe = partial(one_response, http, temporal, model_url, responses == "streamed")
        for _ in range(3):
            await probe()
        runs = [await probe() for _ in range(turns)]
    labels = [label for label in runs[0] if all(label in run for run in runs)]
    medians = {label: round(statistics.median(run[label] for run in runs), 1) for label in labels}
    ordered = sorted(medians.items(), key=lambda item: item[1])
    gaps = {f"{a} → {b}": round(tb - ta, 1) for (a, ta), (b, tb) in itertools.pairwise(ordered)}
    return {"turns": turns, "median_ms_from_post": dict(ordered), "median_gaps_ms": gaps}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10)
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--responses", action="store_const", const="plain", dest="responses")
    kind.add_argument("--responses-streamed", action="store_const", const="streamed", dest="responses")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="da-timeline-"))
    stack = EmbeddedStack(workdir)
    try:
        stack.start()
        print(json.dumps(asyncio.run(measure(stack, args.turns, args.responses))), flush=True)
    finally:
        log("stopping the stack")
        stack.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
