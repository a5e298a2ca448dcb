"""The current llama-stack-client in a virtual environment of its own, `.venv-lsc`.

llama-stack-client 0.7.x needs Python >= 3.12 and cannot share `.venv` with the 0.2.12 client that the
llama-stack dialect's tests pin (and `.venv` is on 3.11). `make test` runs this module to build the
second venv; tests take it through the `lsc_python` fixture and run their client as a script in it
(`run_client`). The interpreter is found as on a fresh machine: `python3.12`, `python3.13` on PATH, then
pyenv's versions. pyenv's `python3.12` shim exits non-zero unless that version is selected, so each
candidate is run, not just looked up; pyenv's versions are tried with `PYENV_VERSION` set, through
`pyenv exec` (which needs no shims on PATH). With no such Python, the build says so in one line and
the tests skip with that same line as their reason.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv-lsc"
PYTHON = VENV / "bin" / "python"
STAMP = VENV / ".deps"
REQUIREMENTS = ("llama-stack-client==0.7.5", "openai==3.54.0")
MINIMUM = (3, 12)
NO_PYTHON = (
    "no Python >= 3.12 found (tried python3.12 and python3.13 on PATH, then pyenv's versions): "
    f"{VENV.name} not built, llama-stack-client 0.7.x not tested"
)
_PROBE = "import sys; print(sys.executable); print(sys.version_info[:2] >= (3, 12))"


def _probe(command: list[str], env: dict[str, str] | None = None) -> Path | None:
    """The interpreter `command` really runs, if it runs and is new enough."""
    try:
        run = subprocess.run([*command, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = run.stdout.split()
    if run.returncode != 0 or lines[-1:] != ["True"]:
        return None
    return Path(lines[0])


def _pyenv_versions(pyenv: str) -> list[str]:
    """pyenv's CPython versions >= MINIMUM, oldest first (the most tested release of the client's range)."""
    try:
        run = subprocess.run([pyenv, "versions", "--bare"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return []
    versions = [line.strip() for line in run.stdout.splitlines() if re.fullmatch(r"3\.\d+\.\d+", line.strip())]
    numbered = sorted((tuple(int(part) for part in version.split(".")), version) for version in versions)
    return [version for number, version in numbered if number[:2] >= MINIMUM]


def find_python() -> Path | None:
    """The first Python >= 3.12 that runs: python3.12, python3.13, then pyenv's versions, oldest first."""
    for name in ("python3.12", "python3.13"):
        if shutil.which(name) and (found := _probe([name])):
            return found
    pyenv = shutil.which("pyenv")
    if pyenv is None:
        return None
    for version in _pyenv_versions(pyenv):
        minor = ".".join(version.split(".")[:2])
        if found := _probe([pyenv, "exec", f"python{minor}"], {**os.environ, "PYENV_VERSION": version}):
            return found
    return None


def _stamp() -> str:
    return "\n".join(REQUIREMENTS) + "\n"


def ensure() -> Path | str:
    """The venv's interpreter, built first if missing or out of date; or why there is none.

    Idempotent and safe to call from concurrent processes (an xdist worker, `make test`). A failing
    `pip install` raises: with a suitable Python, a venv that cannot be built is an error, not a skip."""
    with (ROOT / f"{VENV.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if PYTHON.exists() and STAMP.exists() and STAMP.read_text() == _stamp():
            return PYTHON
        base = find_python()
        if base is None:
            return NO_PYTHON
        shutil.rmtree(VENV, ignore_errors=True)
        uv = Path(sys.executable).with_name("uv")  # installed beside .venv's Python by the Makefile, if it could be
        if uv.exists():
            subprocess.run([str(base), "-m", "venv", "--without-pip", str(VENV)], check=True, timeout=300)
            install = [str(uv), "pip", "install", "--quiet", "--python", str(PYTHON)]
        else:
            subprocess.run([str(base), "-m", "venv", str(VENV)], check=True, timeout=300)
            install = [str(PYTHON), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        subprocess.run([*install, *REQUIREMENTS], check=True, timeout=900)
        STAMP.write_text(_stamp())
        return PYTHON


def run_client(python: Path, script: Path, base_url: str, *args: str, timeout: float = 120) -> dict[str, Any]:
    """Run a client script in `python` against `base_url` (its first argument, `args` follow); return the
    JSON object its last output line holds. A non-zero exit, a timeout or no JSON fails the test with the
    script's output."""
    command = [str(python), str(script), base_url, *args]
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=script.parent)
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"{script.name} did not finish within {timeout:.0f} s\n{_output(expired.stdout, expired.stderr)}")
    lines = run.stdout.strip().splitlines()
    if run.returncode != 0 or not lines or not lines[-1].startswith("{"):
        pytest.fail(f"{script.name} exited with {run.returncode}\n{_output(run.stdout, run.stderr)}")
    return json.loads(lines[-1])


def _output(stdout: str | bytes | None, stderr: str | bytes | None) -> str:
    def text(stream: str | bytes | None) -> str:
        return stream.decode(errors="replace") if isinstance(stream, bytes) else stream or ""

    return f"--- stdout ---\n{text(stdout)[-6000:]}\n--- stderr ---\n{text(stderr)[-6000:]}"


if __name__ == "__main__":
    outcome = ensure()
    print(outcome if isinstance(outcome, str) else f"{VENV.name}: {' '.join(REQUIREMENTS)} ready")
