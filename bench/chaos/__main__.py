"""Turns under fire: kill -9 the worker every few seconds and check that no turn is lost or doubled.

    .venv/bin/python -m bench.chaos                      # 100 turns, 8 sessions, a kill every 5 s
    .venv/bin/python -m bench.chaos --quick              # 10 turns, a kill every 1 s; for the test suite
    .venv/bin/python -m bench.chaos --apis 2 --workers 2 --kill any \
        --store-url postgresql+asyncpg://postgres@127.0.0.1/chaos   # at scale: any process may die
    .venv/bin/python -m bench.chaos --worker-in-api      # serve.py's default: the API runs the turns, and dies

It starts the pieces itself, not serve.py, because only the worker may die: a Temporal dev server
(serve.py's command line, with its SQLite file in a temp dir), bench/model_server.py, the API
(uvicorn) and `python worker.py` — or `--apis` APIs and `--workers` workers on `--store-url`.
Several sessions run a mix of client-tool and plain turns concurrently while a worker is SIGKILLed
`--kill-every` seconds after it starts polling, and restarted at once (on a busy 2-core box a
worker can take longer than that just to start); with `--kill any` the victims take turns among
the workers and the APIs. With `--worker-in-api` there is no worker.py: the APIs run the turns, as
serve.py's do by default, and they are what gets killed. With several APIs, each session's requests
go to one API and move to the next when it does not answer.

The client recovers as a careful real one would: a broken or stalled stream is resumed with
GET .../turn/{id}/events?after=<last id>; a create that failed is looked up in the session before
it is retried (one turn at a time per session makes that safe); a resume that failed is retried
only while the turn awaits input, and a 409 means an earlier resume got through. At the end every
session is read back and one JSON line is printed; the exit status is 1 if a turn was lost or a
tool request was answered twice.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.chaos.stack import ChaosStack
from bench.chaos.workload import workload
from bench.common import (
    log,
)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Kill the worker repeatedly while turns run; count lost turns.")
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--sessions", type=int, default=8, help="sessions running turns concurrently")
    parser.add_argument("--kill-every", type=float, default=5.0, help="seconds a worker lives once it polls")
    parser.add_argument("--max-kills", type=int, default=0, help="stop killing after this many (0: never)")
    parser.add_argument("--turn-deadline", type=float, default=150.0, help="a turn not done by then is lost")
    parser.add_argument("--model-ttft-ms", type=float, default=20.0)
    parser.add_argument("--model-token-ms", type=float, default=20.0)
    parser.add_argument("--cut-streams", type=float, default=0.1, help="fraction of streams we hang up on ourselves")
    parser.add_argument("--seed", type=int, default=1, help="seeds the choice of streams to cut")
    parser.add_argument("--apis", type=int, default=1, help="API processes; sessions are spread across them")
    parser.add_argument("--workers", type=int, default=1, help="worker processes")
    parser.add_argument("--store-url", help="the store (e.g. PostgreSQL); default: a SQLite file in the temp dir")
    parser.add_argument("--kill", choices=("worker", "any"), default="worker", help="any: workers and APIs in turn")
    parser.add_argument("--quick", action="store_true", help="10 turns, 5 sessions, a kill every 1 s, at most 4")
    parser.add_argument(
        "--worker-in-api", action="store_true", help="the APIs run the turns (no worker.py) and are killed"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temp directory (logs, SQLite files)")
    args = parser.parse_args()
    if args.quick:
        # 1 s: the 10 turns take about 2 s now, and the run must see at least one kill. The deadline covers what
        # each of up to 4 kills may cost a turn on a loaded machine (the API's restart, then its workflow task's
        # timeout): 45 s once left a turn counted lost while the whole suite ran beside it.
        args.turns, args.sessions, args.kill_every, args.max_kills = 10, 5, 1.0, 4
        args.turn_deadline = min(args.turn_deadline, 120.0)
    args.sessions = max(1, min(args.sessions, args.turns))
    args.apis = max(1, args.apis)
    args.workers = 0 if args.worker_in_api else max(1, args.workers)
    if args.worker_in_api:
        args.kill = "api"
    return args


def main() -> int:
    args = parse_args()
    # A SIGTERM (a test runner's timeout, say) unwinds through the `finally` below, which stops
    # the processes we started; otherwise they would outlive us.
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))
    workdir = Path(tempfile.mkdtemp(prefix="da-chaos-"))
    stack = ChaosStack(
        workdir, args.model_ttft_ms, args.model_token_ms, args.apis, args.workers, args.store_url, args.worker_in_api
    )
    report: dict[str, Any] | None = None
    try:
        stack.start()
        report = asyncio.run(workload(stack, args))
        print(json.dumps(report, separators=(",", ":")), flush=True)
    finally:
        log("stopping the stack")
        stack.stop()
        if report is not None and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            log(f"logs and data kept in {workdir}")
    return 1 if report is None or report["lost"] or report["duplicated_tool_requests"] else 0


if __name__ == "__main__":
    sys.exit(main())
