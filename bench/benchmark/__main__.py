"""Latency and throughput of the running stack, over real HTTP on loopback; prints one JSON line.

    .venv/bin/python -m bench.benchmark                 # full run (--iterations 50)
    .venv/bin/python -m bench.benchmark --quick         # smoke run, well under a minute of measuring
    .venv/bin/python -m bench.benchmark --responses-only  # only the Responses dialect's figures

It starts everything itself: two bench/model_server.py processes (latency 0, and TTFT 100 ms +
30 ms per token) and `serve.py` (dev server with its SQLite file, the API running the turns; with
`--separate-worker`, a worker.py runs them) with a temporary DA_DATA_DIR and free ports; it stops
them all at the end (SIGINT to serve.py). Figures:

- simple streamed turn: POST turn (stream) → turn_complete, p50/p95;
- client-tool turn: create → turn_awaiting_input → resume (stream) → turn_complete, p50/p95;
- throughput: N sessions (20) concurrently each running M (10) client-tool turns in sequence;
- first text delta (model TTFT 100 ms, 30 ms/token): from our POST to our receipt of the first
  step_progress text delta, and from the model server's first token send to that receipt (all
  stamped with time.monotonic(), one clock for all processes here);
- a turn's cost as its session grows: 300 streamed turns in one session, each answered with 50
  words; p50 latency and CPU per turn of the first 20 turns against the last 20;
- Temporal's floor: a one-activity workflow run with the temporalio SDK on the same dev server;
  and Temporal's part of a turn's way to its model: an eager start with a turn's search attributes
  and summary → its first task → its activity entered (eagerly), which a turn cannot do without;
- the Responses dialect (`/v1/responses`, model latency 0, plain httpx): non-streamed response p50,
  POST → first `response.output_text.delta` p50 (the client reads the SSE), a function-tool round
  trip (a response with a function_call → `previous_response_id` + function_call_output →
  completed), N (20) concurrent clients each creating M (10) non-streamed responses in sequence,
  and the non-streamed figure once more through the `openai` SDK (its overhead on the client's
  side). `--responses-only` measures only these (and the next);
- the Agents API (beta), beside them: a session turn (POST input.message → `agent.session.idle`, the
  client following the session's events) and its first `output_text.delta`, p50/p95.

Each measured turn gets a fresh session (not timed), so session history does not grow across
iterations, except in the session-growth phase; in the throughput phase each simulated client keeps
its one session, as a real one would.
Progress goes to stderr, the JSON line to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from bench.benchmark.agent_sessions import measure_agent_sessions
from bench.benchmark.plan import Plan
from bench.benchmark.responses import measure_responses
from bench.benchmark.stack import (
    FAST_MODEL,
    REQUEST_TIMEOUT,
    SLOW_MODEL,
    SLOW_TOKEN_MS,
    SLOW_TTFT_MS,
    EmbeddedStack,
    cpu_ms_per_turn,
    cpu_seconds,
)
from bench.benchmark.temporal_floor import measure_temporal_floor
from bench.benchmark.turns import (
    GROWTH_WORDS,
    DeltaTiming,
    TurnRunner,
    first_delta_timing,
    in_fresh_session,
    measure_growth,
    measure_throughput,
    repeat,
    simple_turn,
    tool_turn,
)
from bench.common import (
    create_agent,
    log,
    percentiles_ms,
    runtime_revision,
)

# --- Report ------------------------------------------------------------------------------------------


def target(actual: float | int | None, op: str, bound: float) -> dict[str, Any]:
    met = None if actual is None else (actual <= bound if op == "<=" else actual >= bound)
    return {"target": f"{op} {bound:g}", "actual": actual, "met": met}


def targets(report: dict[str, Any]) -> dict[str, Any]:
    """The performance targets, for the embedded stack with model latency 0 (first delta of the llama-stack
    dialect: TTFT 100 ms), for the figures this run measured."""
    found: dict[str, Any] = {}
    if "throughput" in report:
        throughput = report["throughput"]
        found |= {
            "simple_streamed_p50_ms": target(report["simple_streamed_ms"]["p50"], "<=", 85),
            "client_tool_p50_ms": target(report["client_tool_turn_ms"]["p50"], "<=", 190),
            "tool_turns_per_s": target(throughput["tool_turns_per_s"], ">=", 10),
            "throughput_errors": target(throughput["errors"], "<=", 0),
            "post_to_first_text_delta_p50_ms": target(report["first_text_delta_ms"]["post_to_delta"]["p50"], "<=", 135),
            "session_growth_last_over_first_p50": target(report["session_growth"]["last_over_first_p50"], "<=", 1.3),
        }
    if "responses" in report:
        responses = report["responses"]
        found |= {
            "responses_non_streamed_p50_ms": target(responses["non_streamed_ms"]["p50"], "<=", 60),
            "responses_first_text_delta_p50_ms": target(responses["post_to_first_text_delta_ms"]["p50"], "<=", 40),
            "responses_per_s": target(responses["concurrent"]["responses_per_s"], ">=", 24),
            "responses_concurrent_errors": target(responses["concurrent"]["errors"], "<=", 0),
        }
    return found


def plan_from(args: argparse.Namespace) -> Plan:
    if args.quick:
        growth = min(args.growth_turns, 40)
        return Plan(min(args.iterations, 5), 1, 4, 3, args.turn_timeout, growth, 10, 4, 3, args.responses_only)
    window = min(20, args.growth_turns // 2)
    return Plan(
        args.iterations,
        args.warmup,
        args.sessions,
        args.turns_per_session,
        args.turn_timeout,
        args.growth_turns,
        window,
        args.response_clients,
        args.responses_per_client,
        args.responses_only,
    )


async def measure(stack: EmbeddedStack, plan: Plan) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
    async with httpx.AsyncClient(base_url=stack.api_url, timeout=REQUEST_TIMEOUT, limits=limits) as client:
        report = {} if plan.responses_only else await measure_llama_stack(client, stack, plan)
        report["responses"] = await measure_responses(client, stack.api_url, plan, stack.pids())
        report["agent_sessions"] = await measure_agent_sessions(client, plan)
    if not plan.responses_only:
        log(f"Temporal floors x{plan.iterations}")
        measuring = measure_temporal_floor(stack.temporal_address, plan.iterations, plan.warmup)
        floor = await asyncio.wait_for(measuring, 120)
        report["temporal_floor_one_activity_ms"] = percentiles_ms(floor.one_activity)
        report["temporal_eager_start_to_activity_ms"] = percentiles_ms(floor.eager_start_to_activity)
    return report


async def measure_llama_stack(client: httpx.AsyncClient, stack: EmbeddedStack, plan: Plan) -> dict[str, Any]:
    """The llama-stack dialect's figures."""
    assert stack.slow is not None
    agent_id = await create_agent(client, FAST_MODEL)
    slow_agent_id = await create_agent(client, SLOW_MODEL)
    slow, timeout = stack.slow, plan.turn_timeout

    def fresh(run: TurnRunner, label: str) -> Callable[[], Awaitable[float]]:
        return lambda: in_fresh_session(client, agent_id, run, label)

    def probe() -> Awaitable[DeltaTiming]:
        return first_delta_timing(client, slow_agent_id, slow)

    log(f"warm-up: {plan.warmup} simple, {plan.warmup} client-tool, 1 slow-model turn")
    await repeat(plan.warmup, fresh(simple_turn, "warmup"), timeout, "warm-up")
    await repeat(plan.warmup, fresh(tool_turn, "warmup"), timeout, "warm-up")
    await repeat(1, probe, timeout, "warm-up")
    pids = stack.pids()
    log(f"simple streamed turns x{plan.iterations}")
    cpu_before = cpu_seconds(pids)
    simple = await repeat(plan.iterations, fresh(simple_turn, "simple"), timeout, "simple")
    simple_cpu = cpu_ms_per_turn(cpu_before, cpu_seconds(pids), len(simple.results))
    log(f"client-tool turns x{plan.iterations}")
    cpu_before = cpu_seconds(pids)
    tool = await repeat(plan.iterations, fresh(tool_turn, "tool"), timeout, "client-tool")
    tool_cpu = cpu_ms_per_turn(cpu_before, cpu_seconds(pids), len(tool.results))
    log(f"throughput: {plan.sessions} sessions x {plan.turns_per_session} client-tool turns")
    throughput = await measure_throughput(client, agent_id, plan, pids)
    log(f"first text delta x{plan.iterations} (model TTFT {SLOW_TTFT_MS:g} ms, {SLOW_TOKEN_MS:g} ms/token)")
    deltas = await repeat(plan.iterations, probe, timeout, "first text delta")
    log(f"session growth: {plan.growth_turns} turns of {GROWTH_WORDS} words in one session")
    growth = await measure_growth(client, agent_id, plan, pids)
    return {
        "simple_streamed_ms": {**simple.figure(simple.results), "cpu_ms_per_turn": simple_cpu},
        "client_tool_turn_ms": {**tool.figure(tool.results), "cpu_ms_per_turn": tool_cpu},
        "throughput": {
            "sessions": plan.sessions,
            "turns_per_session": plan.turns_per_session,
            **throughput.figures("tool_turns_per_s", "turn_ms", "cpu_ms_per_tool_turn"),
        },
        "first_text_delta_ms": {
            **deltas.figure([d.relay for d in deltas.results]),
            "model_ttft_ms": SLOW_TTFT_MS,
            "model_token_ms": SLOW_TOKEN_MS,
            "post_to_model_request_ms": percentiles_ms([d.to_model for d in deltas.results]),
            "post_to_delta": percentiles_ms([d.post_to_delta for d in deltas.results]),
        },
        "session_growth": growth,
    }


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Benchmark the embedded durable-agents stack over HTTP.")
    parser.add_argument("--iterations", type=int, default=50, help="measured turns per sequential figure")
    parser.add_argument("--warmup", type=int, default=5, help="unmeasured turns of each kind first")
    parser.add_argument("--sessions", type=int, default=20, help="concurrent sessions in the throughput phase")
    parser.add_argument("--turns-per-session", type=int, default=10, help="client-tool turns per session there")
    parser.add_argument("--turn-timeout", type=float, default=60, help="a turn not done by then is an error")
    parser.add_argument("--growth-turns", type=int, default=300, help="turns in the one session of the growth phase")
    parser.add_argument("--response-clients", type=int, default=20, help="concurrent Responses clients")
    parser.add_argument(
        "--responses-per-client", type=int, default=10, help="non-streamed responses each of them creates in turn"
    )
    parser.add_argument("--responses-only", action="store_true", help="only the Responses dialect's figures")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 5 iterations, 4 sessions x 3 turns, 40 growth turns, 4 clients x 3 responses",
    )
    parser.add_argument("--timeout", type=float, default=900, help="give up after this many seconds")
    parser.add_argument(
        "--separate-worker",
        action="store_true",
        help="a worker.py runs the turns (DA_WORKER_IN_API=false) instead of serve.py's default, the API process",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temp directory (logs, SQLite files)")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    plan = plan_from(args)
    # A SIGTERM (a test runner's timeout, say) unwinds through the `finally` below, which stops
    # the processes we started; otherwise they would outlive us.
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))
    workdir = Path(tempfile.mkdtemp(prefix="da-bench-"))
    stack = EmbeddedStack(workdir, worker_in_api=not args.separate_worker)
    ok = False
    try:
        stack.start()
        load_before = os.getloadavg()[0]
        started = time.perf_counter()
        report = asyncio.run(asyncio.wait_for(measure(stack, plan), timeout=args.timeout))
        report = {
            "benchmark": "durable-agents",
            "quick": args.quick,
            "iterations": plan.iterations,
            "revision": runtime_revision(),
            "cpus": os.cpu_count(),
            "worker": "separate process" if args.separate_worker else "in the API process",
            "stack_start_attempts": stack.start_attempts,
            "loadavg_1m": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)},
            **report,
            "measure_seconds": round(time.perf_counter() - started, 1),
        }
        report["targets"] = targets(report)
        print(json.dumps(report, separators=(",", ":")), flush=True)
        ok = True
    finally:
        log("stopping the stack")
        stack.stop()
        if ok and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            log(f"logs and data kept in {workdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
