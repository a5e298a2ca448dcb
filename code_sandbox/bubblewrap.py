"""The bwrap command line that puts one process (and all it starts) in the sandbox.

What the code sees: an empty read-only root (a tmpfs) with `/usr` and the library and binary directories
bound read-only, the few files of `/etc` that the dynamic linker and fonts need, the sandbox's Python
environment at `/opt/sandbox-python`, its container's workspace read-write at `/workspace`, a private
`/tmp`, its own `/proc` and a minimal `/dev`. Nothing else of the host: not `/root`, `/home`, the
project's checkout or the data directory. Every namespace is its own (`--unshare-all`): no network but
a loopback of its own, no other process visible; it runs as uid/gid 1000 with no capabilities, in a new
session (no writing to the worker's terminal), and dies with the process that started it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from code_sandbox.cgroups import CgroupSupport

SANDBOX_UID = 1000
SANDBOX_GID = 1000
SANDBOX_PYTHON_DIR = "/opt/sandbox-python"
SANDBOX_PYTHON = f"{SANDBOX_PYTHON_DIR}/bin/python"
WORKSPACE = "/workspace"
ROOT_DIRECTORIES = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
"""Bound read-only where they are directories; merged-/usr hosts have them as links into /usr, recreated as such."""
ETC_ENTRIES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "fonts", "localtime")
"""What of /etc programs need: the dynamic linker's cache, /usr/bin's alternatives, fontconfig (matplotlib)."""
ENVIRONMENT = {
    "PATH": f"{SANDBOX_PYTHON_DIR}/bin:/usr/local/bin:/usr/bin:/bin",
    "HOME": "/tmp",
    "LANG": "C.UTF-8",
    "MPLBACKEND": "Agg",
    "MPLCONFIGDIR": "/tmp/matplotlib",
    # One thread per numerical library: a container's compute stays within its CPU share and process limit.
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


@dataclass(frozen=True)
class Sandbox:
    """A sandbox that was seen working on this host (availability.find_sandbox), and what it is made of."""

    bwrap: str
    python_env: Path
    python_home: Path
    """The installation the environment's interpreter belongs to (its pyvenv.cfg `home`'s parent)."""
    features: frozenset[str]
    """Options of this bwrap that older releases lack and the sandbox uses when present (`--size`, …)."""
    cgroups: CgroupSupport


def _root_entries() -> list[str]:
    arguments: list[str] = []
    for name in ROOT_DIRECTORIES:
        path = Path("/") / name
        if path.is_symlink():
            arguments += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            arguments += ["--ro-bind", str(path), str(path)]
    for name in ETC_ENTRIES:
        arguments += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return arguments


def bwrap_command(
    sandbox: Sandbox,
    workspace: Path,
    argv: Sequence[str],
    *,
    tmp_bytes: int,
    read_only: Sequence[tuple[Path, str]] = (),
) -> list[str]:
    """bwrap's arguments to run `argv` in the sandbox of `workspace`; `read_only` binds (host path, path
    inside) what else the command needs, e.g. the kernel's helper script. `/tmp` holds at most `tmp_bytes`
    where this bwrap can say so (its pages count against the memory limit in any case)."""
    command = [
        sandbox.bwrap,
        "--unshare-all",
        "--unshare-user",  # --unshare-all only tries: without a user namespace the sandbox must not start
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_GID),
        "--hostname",
        "sandbox",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        *(["--disable-userns"] if "--disable-userns" in sandbox.features else []),
        "--tmpfs",
        "/",
        "--ro-bind",
        "/usr",
        "/usr",
        *_root_entries(),
        "--ro-bind",
        str(sandbox.python_env),
        SANDBOX_PYTHON_DIR,
    ]
    if not sandbox.python_home.is_relative_to("/usr"):
        # An interpreter installed elsewhere (pyenv, /opt): its installation, at its own path, read-only.
        command += ["--ro-bind", str(sandbox.python_home), str(sandbox.python_home)]
    for host_path, inside in read_only:
        command += ["--ro-bind", str(host_path), inside]
    command += [
        "--bind",
        str(workspace),
        WORKSPACE,
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        *(["--size", str(tmp_bytes)] if "--size" in sandbox.features else []),
        "--tmpfs",
        "/tmp",
        "--remount-ro",
        "/",
        "--chdir",
        WORKSPACE,
        "--clearenv",
    ]
    for name, value in ENVIRONMENT.items():
        command += ["--setenv", name, value]
    return [*command, "--", *argv]
