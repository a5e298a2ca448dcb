"""Whether this host can sandbox code, and what to install where it cannot. No sandbox, no execution.

A working sandbox needs bubblewrap (`bwrap`), user namespaces it may create (some distributions switch
them off for unprivileged users), and the sandbox's own Python environment. Each is checked once per
process by really starting a sandbox; what is missing is said in one line naming the fix, and the
callers refuse to run anything.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path

from code_sandbox.bubblewrap import SANDBOX_PYTHON, Sandbox, bwrap_command
from code_sandbox.cgroups import detect_cgroups
from configuration.settings import Settings

DEFAULT_PYTHON_ENV = Path(__file__).resolve().parent.parent / ".venv-sandbox"
INSTALL_BWRAP = (
    "bubblewrap (bwrap) is not installed: install it (Debian/Ubuntu: `apt-get install bubblewrap`, "
    "Fedora/RHEL: `dnf install bubblewrap`); `make run` and `make test` do so when run as root"
)


class SandboxUnavailable(RuntimeError):
    """No sandbox can be had on this host; the message says what to install or enable. Nothing was run."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"no code sandbox on this host, so no code is run: {reason}")


def _python_home(python_env: Path) -> Path:
    config = python_env / "pyvenv.cfg"
    if not (python_env / "bin" / "python").exists() or not config.exists():
        raise SandboxUnavailable(
            f"the sandbox's Python environment {python_env} is missing: build it with `make sandbox-env`"
        )
    for line in config.read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home":
            return Path(value.strip()).parent
    raise SandboxUnavailable(f"{config} names no `home` interpreter: rebuild it with `make sandbox-env`")


def _features(bwrap: str) -> frozenset[str]:
    usage = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10).stdout
    return frozenset(option for option in ("--size", "--disable-userns") if option in usage)


@cache
def find_sandbox(python_env: Path = DEFAULT_PYTHON_ENV, search_path: str | None = None) -> Sandbox:
    """The working sandbox of this host, or SandboxUnavailable saying what is missing.

    `search_path` is where bwrap is looked for (default: PATH). The check starts one sandbox running the
    environment's Python, so a host where user namespaces are refused is found here, not at a user's call."""
    bwrap = shutil.which("bwrap", path=search_path)
    if bwrap is None:
        raise SandboxUnavailable(INSTALL_BWRAP)
    sandbox = Sandbox(bwrap, python_env, _python_home(python_env), _features(bwrap), detect_cgroups())
    _probe(sandbox)
    return sandbox


def configured_sandbox(settings: Settings) -> Sandbox:
    """The sandbox with the configured Python environment (`DA_SANDBOX_PYTHON_ENV`). It starts a process the
    first time: from async code, call it in a thread."""
    return find_sandbox(settings.sandbox_python_env or DEFAULT_PYTHON_ENV)


def _probe(sandbox: Sandbox) -> None:
    with tempfile.TemporaryDirectory(prefix="da-sandbox-probe-") as workspace:
        probe = [SANDBOX_PYTHON, "-I", "-c", "print('ok')"]
        command = bwrap_command(sandbox, Path(workspace), probe, tmp_bytes=1 << 20)
        try:
            run = subprocess.run(command, capture_output=True, text=True, timeout=30)
        except subprocess.TimeoutExpired:
            raise SandboxUnavailable("a test sandbox did not start within 30 s") from None
    if run.stdout.strip() != "ok":
        detail = run.stderr.strip().splitlines()[-1:] or [f"exit code {run.returncode}"]
        raise SandboxUnavailable(
            f"bwrap could not start a sandbox ({detail[0]}); where user namespaces are disabled, enable them "
            "(sysctl kernel.unprivileged_userns_clone=1; on Ubuntu 23.10+ "
            "kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for bwrap)"
        )
