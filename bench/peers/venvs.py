"""Each peer in a virtual environment of its own under `.bench-venvs/`, built from PyPI on first use.

A peer's dependencies (OGX needs Python >= 3.12; llama-stack 0.2.12 pins its own client and FastAPI) cannot
share the project's `.venv`. The interpreter is found the way the test suite finds one for the current
llama-stack-client (tests/support/client_venvs.py): python3.12, python3.13, then pyenv's versions. A stamp
file names what was installed, so a changed pin rebuilds the venv and an unchanged one costs nothing.
"""

from __future__ import annotations

import fcntl
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench.common import REPO_ROOT, log
from tests.support.client_venvs import find_python

VENVS = REPO_ROOT / ".bench-venvs"


@dataclass(frozen=True)
class PeerVenv:
    name: str
    requirements: tuple[str, ...]

    @property
    def path(self) -> Path:
        return VENVS / self.name

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    def script(self, name: str) -> Path:
        return self.path / "bin" / name

    def ensure(self) -> Path:
        """The venv's interpreter, built first if missing or out of date. Raises with the reason when no
        Python >= 3.12 is found or pip fails: a comparison cannot go on without its peer."""
        VENVS.mkdir(exist_ok=True)
        stamp = self.path / ".requirements"
        wanted = "\n".join(self.requirements) + "\n"
        with (VENVS / f"{self.name}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if self.python.exists() and stamp.exists() and stamp.read_text() == wanted:
                return self.python
            base = find_python()
            if base is None:
                raise RuntimeError(
                    f"no Python >= 3.12 found (python3.12, python3.13, pyenv): cannot install {self.name}"
                )
            log(f"installing {' '.join(self.requirements)} into {self.path} with {base} (first use only)")
            subprocess.run([str(base), "-m", "venv", "--clear", str(self.path)], check=True, timeout=300)
            pip = [str(self.python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
            subprocess.run([*pip, *self.requirements], check=True, timeout=1800)
            stamp.write_text(wanted)
            return self.python
