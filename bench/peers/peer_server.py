"""A peer server as a new user starts it: its own venv's run command, its data in the run's directory,
pointed at the benchmark's model servers through the environment its config file reads."""

from __future__ import annotations

import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import free_port, log, spawn, stop_process, wait_for_http
from bench.peers.systems import ModelServers


@dataclass
class PeerServer:
    workdir: Path
    models: ModelServers
    name: str = ""
    title: str = ""
    """What the progress log calls it, with its version."""
    fast_model: str = ""
    slow_model: str = ""
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def root_pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def install(self) -> None:
        raise NotImplementedError

    def command(self) -> list[str]:
        raise NotImplementedError

    def extra_env(self) -> dict[str, str]:
        return {}

    def start(self) -> None:
        self.install()
        store = self.workdir / f"{self.name}-data"
        store.mkdir(exist_ok=True)
        env = {
            "BENCH_FAST_MODEL_URL": f"{self.models.fast.url}/v1",
            "BENCH_SLOW_MODEL_URL": f"{self.models.slow.url}/v1",
            "SQLITE_STORE_DIR": str(store),
            "HOME": str(store),  # its ~/.<name>
            **self.extra_env(),
        }
        log(f"starting {self.title} at {self.base_url}")
        self.process = spawn(self.command(), self.workdir / f"{self.name}.log", env, cwd=store)
        wait_for_http(f"{self.base_url}/v1/health", [self.process], 180)

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process, signal.SIGINT, 30)
