"""llama-stack 0.2.12, the reference server of our llama-stack dialect, as a peer.

Installed from PyPI into `.bench-venvs/llama-stack` on first use, with its providers' dependencies as
`llama stack build --config bench/peers/llama_stack_build.yaml --print-deps-only` lists them (installed
with pip, not its `uv`), and started with its documented command, `llama stack run CONFIG --port N`, on
bench/peers/llama_stack.yaml: the remote-vllm template at its defaults with the scripted model servers as
the vLLM endpoints.
"""

from __future__ import annotations

import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import free_port, log, spawn, stop_process, wait_for_http
from bench.peers.systems import ModelServers
from bench.peers.venvs import PeerVenv

HERE = Path(__file__).resolve().parent
CONFIG = HERE / "llama_stack.yaml"
BUILD = HERE / "llama_stack_build.yaml"
VENV = PeerVenv("llama-stack", ("llama-stack==0.2.12",))


def install() -> Path:
    """The venv with llama-stack and its providers' dependencies; a stamp marks them as installed."""
    python = VENV.ensure()
    stamp = VENV.path / ".provider-deps"
    wanted = BUILD.read_text()
    if not stamp.exists() or stamp.read_text() != wanted:
        log("installing llama-stack's provider dependencies (llama stack build --print-deps-only)")
        listed = subprocess.run(
            [str(VENV.script("llama")), "stack", "build", "--config", str(BUILD), "--print-deps-only"],
            check=True,
            capture_output=True,
            text=True,
            timeout=300,
        )
        packages: list[str] = []
        for line in listed.stdout.splitlines():
            if line.startswith("uv pip install "):
                packages += [word for word in line.split()[3:] if not word.startswith("-")]
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", *packages], check=True, timeout=1800)
        stamp.write_text(wanted)
    return python


@dataclass
class LlamaStack:
    workdir: Path
    models: ModelServers
    name: str = "llama-stack"
    fast_model: str = "bench"
    slow_model: str = "bench-ttft"
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        install()
        store = self.workdir / "llama-stack-data"
        store.mkdir(exist_ok=True)
        env = {
            "BENCH_FAST_MODEL_URL": f"{self.models.fast.url}/v1",
            "BENCH_SLOW_MODEL_URL": f"{self.models.slow.url}/v1",
            "SQLITE_STORE_DIR": str(store),
            "HOME": str(store),  # its ~/.llama
        }
        command = [str(VENV.script("llama")), "stack", "run", str(CONFIG), "--port", str(self.port)]
        log(f"starting llama-stack 0.2.12 at {self.base_url}")
        self.process = spawn(command, self.workdir / "llama-stack.log", env, cwd=store)
        wait_for_http(f"{self.base_url}/v1/health", [self.process], 180)

    @property
    def root_pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process, signal.SIGINT, 30)
