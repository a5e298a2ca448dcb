"""The llama-stack Agents API figures of one system, with bench/benchmark's own turn code.

Simple streamed turn p50, client-tool turn p50 (create → awaiting input → resume → complete), N sessions x
M client-tool turns at once (turns/s and errors), and POST → first text delta at 100 ms TTFT / 30 ms per
token. Each measured turn gets a fresh session, as in bench/benchmark.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from bench.benchmark.plan import Plan
from bench.benchmark.turns import (
    DeltaTiming,
    TurnRunner,
    first_delta_timing,
    in_fresh_session,
    measure_throughput,
    repeat,
    simple_turn,
    tool_turn,
)
from bench.common import ModelServer, create_agent, log, percentiles_ms
from bench.peers.cpu import tree_cpu_seconds, with_cpu_ms
from bench.peers.plan import PeerPlan


async def measure(
    base_url: str, fast: str, slow: str, slow_server: ModelServer, root: int, plan: PeerPlan
) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
    timeout = httpx.Timeout(plan.timeout, connect=5.0)
    seconds = plan.timeout
    figures: dict[str, Any] = {}
    async with httpx.AsyncClient(base_url=base_url, timeout=timeout, limits=limits) as client:
        agent_id = await create_agent(client, fast)
        slow_agent_id = await create_agent(client, slow)

        def fresh(run: TurnRunner, label: str) -> Callable[[], Awaitable[float]]:
            return lambda: in_fresh_session(client, agent_id, run, label)

        def probe() -> Awaitable[DeltaTiming]:
            return first_delta_timing(client, slow_agent_id, slow_server)

        log(f"agents: warm-up x{plan.warmup}")
        await repeat(plan.warmup, fresh(simple_turn, "warmup"), seconds, "warm-up")
        await repeat(plan.warmup, fresh(tool_turn, "warmup"), seconds, "warm-up")
        await repeat(1, probe, seconds, "warm-up")
        for name, run in (("simple_turn_ms", simple_turn), ("tool_turn_ms", tool_turn)):
            log(f"agents: {name} x{plan.iterations}")
            phase, cpu = await with_cpu_ms(
                root, lambda phase: len(phase.results), repeat(plan.iterations, fresh(run, name), seconds, name)
            )
            figures[name] = {**phase.figure(phase.results), "cpu_ms_per_turn": cpu}
        log(f"agents: {plan.sessions} sessions x {plan.turns_per_session} client-tool turns")
        load = Plan(plan.iterations, plan.warmup, plan.sessions, plan.turns_per_session, seconds, 0, 0, 0, 0, False)
        before = tree_cpu_seconds(root)
        throughput = await measure_throughput(client, agent_id, load, {})
        throughput.cpu_before, throughput.cpu_after = {"system": before}, {"system": tree_cpu_seconds(root)}
        log(f"agents: first text delta x{plan.iterations} (100 ms TTFT)")
        deltas, cpu = await with_cpu_ms(
            root, lambda phase: len(phase.results), repeat(plan.iterations, probe, seconds, "first delta")
        )
    figures["throughput"] = {
        "sessions": plan.sessions,
        "turns_per_session": plan.turns_per_session,
        **throughput.figures("per_s", "turn_ms", "cpu_ms_per_turn"),
    }
    figures["first_text_delta_ms"] = {
        **deltas.figure([d.post_to_delta for d in deltas.results]),
        "model_first_token_to_delta": percentiles_ms([d.relay for d in deltas.results]),
        "cpu_ms_per_turn": cpu,
    }
    return figures
