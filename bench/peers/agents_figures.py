"""The llama-stack Agents API figures of one system, with bench/benchmark's own turn code.

Simple streamed turn p50, client-tool turn p50 (create → awaiting input → resume → complete), N sessions x
M client-tool turns at once (turns/s and errors), and POST → first text delta at 100 ms TTFT / 30 ms per
token. Each measured turn gets a fresh session, as in bench/benchmark.
"""

from __future__ import annotations

from typing import Any

import httpx

from bench.benchmark.plan import Plan
from bench.benchmark.turns import (
    first_delta_timing,
    in_fresh_session,
    measure_throughput,
    repeat,
    simple_turn,
    tool_turn,
)
from bench.common import ModelServer, create_agent, log, percentiles_ms
from bench.peers.plan import PeerPlan


async def measure(base_url: str, fast: str, slow: str, slow_server: ModelServer, plan: PeerPlan) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
    async with httpx.AsyncClient(
        base_url=base_url, timeout=httpx.Timeout(plan.timeout, connect=5.0), limits=limits
    ) as client:
        agent_id = await create_agent(client, fast)
        slow_agent_id = await create_agent(client, slow)
        timeout = plan.timeout
        log(f"agents: warm-up x{plan.warmup}")
        await repeat(plan.warmup, lambda: in_fresh_session(client, agent_id, simple_turn, "warmup"), timeout, "warm-up")
        await repeat(plan.warmup, lambda: in_fresh_session(client, agent_id, tool_turn, "warmup"), timeout, "warm-up")
        await repeat(1, lambda: first_delta_timing(client, slow_agent_id, slow_server), timeout, "warm-up")
        log(f"agents: simple turns x{plan.iterations}")
        simple = await repeat(
            plan.iterations, lambda: in_fresh_session(client, agent_id, simple_turn, "simple"), timeout, "simple"
        )
        log(f"agents: client-tool turns x{plan.iterations}")
        tool = await repeat(
            plan.iterations, lambda: in_fresh_session(client, agent_id, tool_turn, "tool"), timeout, "tool"
        )
        log(f"agents: {plan.sessions} sessions x {plan.turns_per_session} client-tool turns")
        load = Plan(plan.iterations, plan.warmup, plan.sessions, plan.turns_per_session, timeout, 0, 0, 0, 0, False)
        throughput = await measure_throughput(client, agent_id, load, {})
        log(f"agents: first text delta x{plan.iterations} (100 ms TTFT)")
        deltas = await repeat(
            plan.iterations, lambda: first_delta_timing(client, slow_agent_id, slow_server), timeout, "first delta"
        )
    return {
        "simple_turn_ms": simple.figure(simple.results),
        "tool_turn_ms": tool.figure(tool.results),
        "throughput": {
            "sessions": plan.sessions,
            "turns_per_session": plan.turns_per_session,
            **throughput.figures("per_s", "turn_ms", "cpu_ms"),
        },
        "first_text_delta_ms": {
            **deltas.figure([d.post_to_delta for d in deltas.results]),
            "model_first_token_to_delta": percentiles_ms([d.relay for d in deltas.results]),
        },
    }
