"""The stack a benchmark run measures: model servers and serve.py on free ports, and the CPU its processes use."""

from __future__ import annotations

import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.common import (
    REPO_ROOT,
    ModelServer,
    free_port,
    log,
    models_env,
    spawn,
    start_model_server,
    stop_process,
    wait_for_http,
)

FAST_MODEL = "bench"
SLOW_MODEL = "bench-ttft"
SLOW_TTFT_MS = 100.0
SLOW_TOKEN_MS = 30.0
REQUEST_TIMEOUT = httpx.Timeout(30.0, connect=5.0)


# --- The stack ---------------------------------------------------------------------------------


@dataclass
class EmbeddedStack:
    """serve.py (dev server, API with its worker or a separate one) and our two model servers, in a temp
    directory."""

    workdir: Path
    worker_in_api: bool = True
    """serve.py's default; False: a separate worker.py runs the turns."""
    checkout: Path = REPO_ROOT
    """Whose serve.py (and code) runs: another checkout of the project, for bench/paired_ab.py."""
    api_port: int = field(default_factory=free_port)
    temporal_port: int = field(default_factory=free_port)
    ui_port: int = field(default_factory=free_port)
    fast: ModelServer | None = None
    slow: ModelServer | None = None
    serve: Any = None
    start_attempts: int = 0

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def temporal_address(self) -> str:
        return f"127.0.0.1:{self.temporal_port}"

    def start(self) -> None:
        self.fast = start_model_server(0, 0, self.workdir / "model-fast.log")
        self.slow = start_model_server(SLOW_TTFT_MS, SLOW_TOKEN_MS, self.workdir / "model-slow.log")
        for attempt in (1, 2):
            try:
                self._start_serve(attempt)
                return
            except RuntimeError as error:
                # One visible retry with a fresh data dir: serve.py once failed here now and then
                # (worker and API racing to create the store's tables on a fresh SQLite file).
                tail = (self.workdir / f"serve-{attempt}.log").read_text(errors="replace").splitlines()
                causes = [line for line in tail if "Error" in line][-1:]
                log(f"serve.py attempt {attempt} failed: {error}; {causes}")
                if attempt == 2:
                    raise

    def _start_serve(self, attempt: int) -> None:
        assert self.fast is not None and self.slow is not None
        self.start_attempts = attempt
        if attempt > 1:
            self.api_port, self.temporal_port, self.ui_port = free_port(), free_port(), free_port()
        env = {
            "DA_DATA_DIR": str(self.workdir / f"data-{attempt}"),
            "DA_API_PORT": str(self.api_port),
            "DA_TEMPORAL_PORT": str(self.temporal_port),
            "DA_TEMPORAL_UI_PORT": str(self.ui_port),
            "DA_MODELS": models_env({FAST_MODEL: self.fast, SLOW_MODEL: self.slow}),
            "DA_WORKER_IN_API": "true" if self.worker_in_api else "false",
            "DA_RATE_LIMIT_PER_MINUTE": "0",  # measures the runtime, not the per-key limiter
        }
        log(f"starting serve.py: API {self.api_url}, Temporal {self.temporal_address} (logs in {self.workdir})")
        serve = [sys.executable, str(self.checkout / "serve.py")]
        self.serve = spawn(serve, self.workdir / f"serve-{attempt}.log", env, cwd=self.checkout)
        try:
            wait_for_http(f"{self.api_url}/v1/health", [self.serve], 120)
        except RuntimeError:
            stop_process(self.serve, signal.SIGINT, 40)
            raise

    def stop(self) -> None:
        if self.serve is not None:
            stop_process(self.serve, signal.SIGINT, 40)
        for server in (self.fast, self.slow):
            if server is not None:
                stop_process(server.process, signal.SIGTERM, 10)

    def pids(self) -> dict[str, int]:
        """Our processes by role: serve.py's children, the fast model, us."""
        found = {"bench_client": os.getpid()}
        if self.fast is not None:
            found["model"] = self.fast.process.pid
        return found | serve_children(self.serve.pid)


def serve_children(serve_pid: int) -> dict[str, int]:
    """serve.py's children by role (found by parent pid): the API, a separate worker if any, the dev server."""
    roles = {"api": "uvicorn", "worker": "worker.py", "temporal": "temporal"}
    found = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if _parent_pid(int(proc.name)) != serve_pid:
                continue
            command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError):
            continue
        found.update({role: int(proc.name) for role, word in roles.items() if word in command})
    return found


def _stat_fields(pid: int) -> list[str]:
    """/proc/<pid>/stat after the command name (which may contain spaces); field 3 is first."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _parent_pid(pid: int) -> int:
    return int(_stat_fields(pid)[1])


def cpu_seconds(pids: dict[str, int]) -> dict[str, float]:
    """User + system CPU time each process has used so far (Linux /proc; empty elsewhere)."""
    ticks = os.sysconf("SC_CLK_TCK")
    used: dict[str, float] = {}
    for role, pid in pids.items():
        try:
            fields = _stat_fields(pid)
        except OSError:
            continue
        used[role] = (int(fields[11]) + int(fields[12])) / ticks
    return used


def cpu_ms_per_turn(before: dict[str, float], after: dict[str, float], turns: int) -> dict[str, float]:
    """CPU milliseconds each process spent per turn between two readings of cpu_seconds().
    Steadier than latency on a shared machine: what to compare when trying a design."""
    return {role: round(1000 * (after[role] - before[role]) / max(1, turns), 1) for role in after if role in before}
