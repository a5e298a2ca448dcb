"""The systems a comparison runs, one at a time, against the same scripted model servers.

`ModelServers` are bench/model_server.py twice: latency 0 (chat and embeddings) and TTFT 100 ms + 30 ms per
token. `System` is what each side (ours, or a peer) provides: start, stop, its base URL and the model ids
it serves them under. Ours is `make run`'s stack (serve.py) at its defaults, pointed at the model servers.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from bench.common import (
    REPO_ROOT,
    ModelServer,
    free_port,
    log,
    spawn,
    start_model_server,
    stop_process,
    wait_for_http,
)

FAST_MODEL = "bench"
SLOW_MODEL = "bench-ttft"
EMBEDDING_MODEL = "bench-embedding"
EMBEDDING_DIMENSION = 256
SLOW_TTFT_MS = 100.0
SLOW_TOKEN_MS = 30.0


@dataclass
class ModelServers:
    fast: ModelServer
    slow: ModelServer

    @classmethod
    def start(cls, workdir: Path) -> ModelServers:
        fast = start_model_server(0, 0, workdir / "model-fast.log")
        slow = start_model_server(SLOW_TTFT_MS, SLOW_TOKEN_MS, workdir / "model-slow.log")
        return cls(fast, slow)

    def stop(self) -> None:
        for server in (self.fast, self.slow):
            stop_process(server.process, signal.SIGTERM, 10)


class System(Protocol):
    """One side of a comparison: a server on loopback with the models FAST, SLOW and EMBEDDING."""

    name: str
    fast_model: str
    """The id clients name for the 0 ms model."""
    slow_model: str
    """The id clients name for the 100 ms TTFT model."""

    @property
    def base_url(self) -> str: ...

    @property
    def root_pid(self) -> int:
        """The process the benchmark started: its tree is the system's CPU."""
        ...

    def start(self) -> None: ...

    def stop(self) -> None: ...


@dataclass
class Ours:
    """`make run`'s stack (serve.py: the Temporal dev server, the API running the turns) at its defaults;
    only the data directory, the ports and the models are set."""

    workdir: Path
    models: ModelServers
    name: str = "durable-agents"
    fast_model: str = FAST_MODEL
    slow_model: str = SLOW_MODEL
    api_port: int = field(default_factory=free_port)
    serve: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def start(self) -> None:
        fast, slow = self.models.fast.url, self.models.slow.url
        models = {
            FAST_MODEL: {"provider": "openai", "base_url": f"{fast}/v1"},
            SLOW_MODEL: {"provider": "openai", "base_url": f"{slow}/v1"},
            EMBEDDING_MODEL: {
                "provider": "openai",
                "base_url": f"{fast}/v1",
                "model_type": "embedding",
                "embedding_dimension": EMBEDDING_DIMENSION,
            },
        }
        env = {
            "DA_DATA_DIR": str(self.workdir / "ours-data"),
            "DA_API_PORT": str(self.api_port),
            "DA_TEMPORAL_PORT": str(free_port()),
            "DA_TEMPORAL_UI_PORT": str(free_port()),
            "DA_MODELS": json.dumps(models),
            "DA_DEFAULT_EMBEDDING_MODEL": EMBEDDING_MODEL,
        }
        log(f"starting durable-agents (serve.py) at {self.base_url}")
        self.serve = spawn([sys.executable, str(REPO_ROOT / "serve.py")], self.workdir / "ours.log", env)
        wait_for_http(f"{self.base_url}/v1/health", [self.serve], 180)

    @property
    def root_pid(self) -> int:
        assert self.serve is not None
        return self.serve.pid

    def stop(self) -> None:
        if self.serve is not None:
            stop_process(self.serve, signal.SIGINT, 40)
