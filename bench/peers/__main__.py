"""Side-by-side figures against the peers the performance targets name; one JSON line per figure.

    .venv/bin/python -m bench.peers --peer ogx|llama-stack|all [--quick] [--parts responses,websocket,knowledge,agents]

The same two bench/model_server.py processes (latency 0 with embeddings, and TTFT 100 ms + 30 ms per token)
serve every system; the systems run one at a time (the peer, then ours) and the same client code measures
each. Against OGX 1.5: the Responses figures and knowledge (ingest and search); against llama-stack 0.2.12:
the Agents API figures. Each line carries ours, the peer's, the ratio, the target for the ratio and whether
it is met, and the 1-minute load average before each side's measurement (the machine may be shared).
Progress goes to stderr; logs stay in the temporary directory when a run fails or with `--keep`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import log, runtime_revision
from bench.peers import agents_figures, knowledge_figures, responses_figures, websocket_figures
from bench.peers.compare import (
    KNOWLEDGE_TARGETS,
    LLAMA_STACK_TARGETS,
    RESPONSES_TARGETS,
    WEBSOCKET_TARGETS,
    compare,
    print_rows,
    socket_against_http,
)
from bench.peers.llama_stack import LlamaStack
from bench.peers.ogx import Ogx
from bench.peers.plan import PeerPlan
from bench.peers.systems import ModelServers, Ours, System

PEER_PARTS = {"ogx": ("responses", "websocket", "knowledge"), "llama-stack": ("agents",)}
TARGETS = {
    "responses": RESPONSES_TARGETS,
    "websocket": WEBSOCKET_TARGETS,
    "knowledge": KNOWLEDGE_TARGETS,
    "agents": LLAMA_STACK_TARGETS,
}


def measure_parts(system: System, parts: tuple[str, ...], models: ModelServers, plan: PeerPlan) -> dict[str, Any]:
    """Start the system, measure each part, stop it; a part that fails is reported, not fatal."""
    figures: dict[str, Any] = {}
    system.start()
    try:
        for part in parts:
            load = round(os.getloadavg()[0], 2)
            log(f"{system.name}: {part} (load average {load})")
            try:
                if part == "responses":
                    found = asyncio.run(
                        responses_figures.measure(
                            system.base_url, system.fast_model, system.slow_model, system.root_pid, plan
                        )
                    )
                elif part == "websocket":
                    found = asyncio.run(
                        websocket_figures.measure(
                            system.base_url, system.fast_model, system.slow_model, system.root_pid, plan
                        )
                    )
                elif part == "agents":
                    measuring = agents_figures.measure(
                        system.base_url, system.fast_model, system.slow_model, models.slow, system.root_pid, plan
                    )
                    found = asyncio.run(measuring)
                else:
                    found = knowledge_figures.measure(system.base_url, system.root_pid, plan)
            except Exception as error:
                log(f"{system.name}: {part} failed: {error!r}")
                found = {"failed": repr(error)[:500]}
            figures[part] = {**found, "loadavg_1m": load}
    finally:
        system.stop()
    return figures


def run_peer(peer: str, parts: tuple[str, ...], workdir: Path, plan: PeerPlan) -> list[dict[str, Any]]:
    models = ModelServers.start(workdir)
    try:
        build: Callable[[Path, ModelServers], System] = Ogx if peer == "ogx" else LlamaStack
        theirs = measure_parts(build(workdir, models), parts, models, plan)
        ours = measure_parts(Ours(workdir, models), parts, models, plan)
    finally:
        models.stop()
    context = {"revision": runtime_revision(), "cpus": os.cpu_count(), "quick": plan.iterations < PeerPlan().iterations}
    rows = []
    for part in parts:
        rows += compare(TARGETS[part], peer, ours[part], theirs[part], context)
        if part == "websocket":
            rows.append(socket_against_http(peer, ours[part], context))
        rows.append({"figure": f"{part}_details", "peer": peer, "ours": ours[part], "theirs": theirs[part], **context})
        for side, figures in (("ours", ours[part]), (peer, theirs[part])):
            if "failed" in figures:
                rows.append({"figure": f"{part}_failed", "peer": peer, "side": side, "error": figures["failed"]})
    return rows


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer", choices=("ogx", "llama-stack", "all"), default="all")
    parser.add_argument("--parts", default="", help="only these parts (responses, websocket, knowledge, agents)")
    parser.add_argument("--quick", action="store_true", help="fewer iterations, turns and a 1 MB corpus: a smoke run")
    parser.add_argument("--iterations", type=int, default=None, help="measured requests per sequential figure")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, data)")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    plan = PeerPlan.quick() if args.quick else PeerPlan()
    if args.iterations:
        plan = PeerPlan(**{**plan.__dict__, "iterations": args.iterations})
    wanted = set(filter(None, args.parts.split(",")))
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))
    workdir = Path(tempfile.mkdtemp(prefix="da-bench-peers-"))
    ok = False
    try:
        for peer in ("ogx", "llama-stack") if args.peer == "all" else (args.peer,):
            parts = tuple(part for part in PEER_PARTS[peer] if not wanted or part in wanted)
            if parts:
                print_rows(run_peer(peer, parts, workdir, plan))
        ok = True
    finally:
        if ok and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            log(f"logs and data kept in {workdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
