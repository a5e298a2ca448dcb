"""llama-stack 0.2.12, the reference server of our llama-stack dialect, as a peer.

Installed from PyPI into `.bench-venvs/llama-stack` on first use, with its providers' dependencies as
`llama stack build --config bench/peers/llama_stack_build.yaml --print-deps-only` lists them (installed
with pip, not its `uv`), and started with its documented command, `llama stack run CONFIG --port N`, on
bench/peers/llama_stack.yaml: the remote-vllm template at its defaults with the scripted model servers as
the vLLM endpoints.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench.common import log
from bench.peers.peer_server import PeerServer
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
class LlamaStack(PeerServer):
    name: str = "llama-stack"
    title: str = "llama-stack 0.2.12"
    fast_model: str = "bench"
    slow_model: str = "bench-ttft"

    def install(self) -> None:
        install()

    def command(self) -> list[str]:
        return [str(VENV.script("llama")), "stack", "run", str(CONFIG), "--port", str(self.port)]
