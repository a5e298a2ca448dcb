"""A lever's effect on a machine whose pace drifts: this checkout against another, probe by probe.

    .venv/bin/python -m bench.paired_ab OTHER_CHECKOUT [--probes 80]
        [--kind first-delta|simple|tool|response|response-delta|response-delta-ttft]

Two full benchmark runs minutes apart can differ by more than a lever is worth (a shared VM's pace
moved by 30% within one session). Here both checkouts' stacks (bench/benchmark's EmbeddedStack:
serve.py, the API running the turns, the two model servers) are up at once and lone probes
alternate between them, each in a fresh session, so drift falls on both alike; the median of the
probe-by-probe differences is the lever's effect. Kinds: `first-delta`, POST → first text delta with
the model's first token at 100 ms; `simple`, a streamed turn on the zero-latency model; `tool`, a
client-tool turn (create → awaiting input → resume → complete) on it; `response`, a non-streamed
`POST /v1/responses` on it; `response-delta`, POST (streamed) → its first `response.output_text.delta` on it;
`response-delta-ttft`, the same with the model's first token at 100 ms.
Prints one JSON line: each side's p50 and the differences (this checkout minus the other), in ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

import httpx

from bench.benchmark.responses import non_streamed_response, response_first_delta
from bench.benchmark.stack import FAST_MODEL, REQUEST_TIMEOUT, SLOW_MODEL, EmbeddedStack
from bench.benchmark.turns import first_delta_timing, in_fresh_session, simple_turn, tool_turn
from bench.common import REPO_ROOT, create_agent, log, runtime_revision

Probe = Callable[[], Awaitable[float]]
WARMUP = 5


async def _probe_of(kind: str, client: httpx.AsyncClient, stack: EmbeddedStack) -> Probe:
    """One timed probe of `kind` against `stack`, in seconds."""
    if kind == "response":
        return partial(non_streamed_response, client)
    if kind == "response-delta":
        return partial(response_first_delta, client)
    if kind == "response-delta-ttft":
        return partial(response_first_delta, client, SLOW_MODEL)
    if kind == "first-delta":
        assert stack.slow is not None
        slow, agent_id = stack.slow, await create_agent(client, SLOW_MODEL)

        async def first_delta() -> float:
            return (await first_delta_timing(client, agent_id, slow)).post_to_delta

        return first_delta
    agent_id = await create_agent(client, FAST_MODEL)
    turn = simple_turn if kind == "simple" else tool_turn
    return lambda: in_fresh_session(client, agent_id, turn, "paired")


async def measure(checkouts: list[Path], kind: str, probes: int) -> dict[str, list[float]]:
    stacks = [EmbeddedStack(Path(tempfile.mkdtemp(prefix="da-paired-")), checkout=path) for path in checkouts]
    clients: list[httpx.AsyncClient] = []
    try:
        timed: list[Probe] = []
        for stack in stacks:
            stack.start()
            clients.append(httpx.AsyncClient(base_url=stack.api_url, timeout=REQUEST_TIMEOUT))
            timed.append(await _probe_of(kind, clients[-1], stack))
        for probe in timed:
            for _ in range(WARMUP):
                await probe()
        log(f"{probes} {kind} probes on each, alternating")
        results: list[list[float]] = [[] for _ in checkouts]
        for index in range(probes):
            order = range(len(timed)) if index % 2 == 0 else reversed(range(len(timed)))
            for side in order:
                results[side].append(await timed[side]())
        return {str(path): durations for path, durations in zip(checkouts, results, strict=True)}
    finally:
        for client in clients:
            await client.aclose()
        for stack in stacks:
            stack.stop()


def report(this: Path, other: Path, kind: str, found: dict[str, list[float]]) -> dict[str, object]:
    mine, theirs = found[str(this)], found[str(other)]
    differences = sorted((a - b) * 1000 for a, b in zip(mine, theirs, strict=True))
    quartiles = statistics.quantiles(differences, n=4, method="inclusive")
    return {
        "kind": kind,
        "probes": len(differences),
        "this": {"revision": runtime_revision(this), "p50_ms": round(statistics.median(mine) * 1000, 2)},
        "other": {"revision": runtime_revision(other), "p50_ms": round(statistics.median(theirs) * 1000, 2)},
        "this_minus_other_ms": {
            "median": round(statistics.median(differences), 2),
            "p25": round(quartiles[0], 2),
            "p75": round(quartiles[2], 2),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="This checkout against another, probes alternating.")
    parser.add_argument("other", type=Path, help="the other checkout of the project (a git worktree, say)")
    parser.add_argument(
        "--kind",
        choices=["first-delta", "simple", "tool", "response", "response-delta", "response-delta-ttft"],
        default="first-delta",
    )
    parser.add_argument("--probes", type=int, default=80, help="timed probes on each side")
    args = parser.parse_args()
    other = args.other.resolve()
    if not (other / "serve.py").exists():
        parser.error(f"{other} is not a checkout of this project (it has no serve.py)")
    found = asyncio.run(measure([REPO_ROOT, other], args.kind, args.probes))
    print(json.dumps(report(REPO_ROOT, other, args.kind, found)))


if __name__ == "__main__":
    main()
