"""A control group per sandbox: a memory limit, a process limit and CPU accounting over all its processes.

Where the worker may create cgroups (as root, or in a systemd unit with `Delegate=yes`), each sandbox gets
one below the worker's own: under cgroup v2 one directory (memory.max, pids.max, cpu.stat, cgroup.kill);
under v1 one in each of the memory, pids and cpuacct hierarchies. Hosts mixing both (v1 controllers beside
an empty v2 hierarchy) use whichever has the controller. Where none is writable, `CgroupSupport` says so and
the runner falls back to per-process rlimits (docs/code-sandbox.md says what that loses).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PREFIX = "da-sandbox-"
_STALE = re.compile(rf"{PREFIX}(\d+)-")


@dataclass(frozen=True)
class CgroupSupport:
    """Per controller, the directory under which a sandbox's cgroup is made (None: not available)."""

    version: int | None = None
    memory: Path | None = None
    pids: Path | None = None
    cpu: Path | None = None

    def describe(self) -> str:
        if self.version is None:
            return "no writable cgroup: memory by address-space rlimit, processes by RLIMIT_NPROC, CPU from /proc"
        found = [name for name in ("memory", "pids", "cpu") if getattr(self, name) is not None]
        return f"cgroup v{self.version}: {', '.join(found)}"


def _mounts() -> list[tuple[str, Path, str, set[str]]]:
    """(root, mount point, fstype, super options) of each cgroup filesystem this process sees."""
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields, _, tail = line.partition(" - ")
        parts, extra = fields.split(), tail.split()
        if len(extra) >= 3 and extra[0] in ("cgroup", "cgroup2"):
            mounts.append((parts[3], Path(parts[4]), extra[0], set(extra[2].split(","))))
    return mounts


def _own_paths() -> dict[str, str]:
    """This process's cgroup path per v1 controller, and under "" its v2 path."""
    paths = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller] = path
    return paths


def _inside(mount: Path, root: str, path: str) -> Path:
    relative = path[len(root) :] if root != "/" and path.startswith(root) else path
    return mount / relative.lstrip("/")


def _writable(directory: Path) -> bool:
    return directory.is_dir() and os.access(directory, os.W_OK)


def _v2_base(mount: Path, root: str, path: str, controllers: set[str]) -> Path | None:
    """The closest cgroup at or above ours whose children get `controllers` and that we may write: our own
    when it has no processes of its own (it was delegated to us), else its parent (systemd's Delegate=yes
    with the worker in a leaf)."""
    own = _inside(mount, root, path)
    for candidate in (own, own.parent):
        try:
            enabled = set((candidate / "cgroup.subtree_control").read_text().split())
        except OSError:
            continue
        if controllers <= enabled and _writable(candidate) and candidate.is_relative_to(mount):
            return candidate
    return None


@cache
def detect_cgroups() -> CgroupSupport:
    """What this host lets the worker do, found once per process; stale cgroups of dead workers are removed."""
    try:
        mounts, own = _mounts(), _own_paths()
    except OSError:
        return CgroupSupport()
    support = CgroupSupport()
    for root, mount, fstype, _options in mounts:
        if fstype == "cgroup2" and "" in own:
            memory = _v2_base(mount, root, own[""], {"memory"})
            pids = _v2_base(mount, root, own[""], {"pids"})
            if memory or pids:
                # cpu.stat's usage_usec is kept in every v2 cgroup, with or without the cpu controller.
                support = CgroupSupport(2, memory, pids, memory or pids)
    if support.version is None:
        found: dict[str, Path] = {}
        for root, mount, fstype, options in mounts:
            for controller, name in (("memory", "memory"), ("pids", "pids"), ("cpuacct", "cpu")):
                if fstype == "cgroup" and controller in options and controller in own:
                    base = _inside(mount, root, own[controller])
                    if _writable(base):
                        found[name] = base
        if found:
            support = CgroupSupport(1, found.get("memory"), found.get("pids"), found.get("cpu"))
    for parent in {support.memory, support.pids, support.cpu}:
        if parent is not None:
            _remove_stale(parent)
    return support


def _remove_stale(base: Path) -> None:
    """Empty sandbox cgroups left by a worker that was killed (its pid is in the name)."""
    for child in base.glob(f"{PREFIX}*"):
        owner = _STALE.match(child.name)
        if owner and not Path(f"/proc/{owner.group(1)}").exists():
            with contextlib.suppress(OSError):
                child.rmdir()


def _read_counter(path: Path, key: str) -> int:
    """A `key value` line's value in a cgroup's flat-keyed file (0 when the file or the key is missing)."""
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


class SandboxCgroup:
    """The cgroup(s) of one sandbox. Made before the sandbox starts, removed after all its processes are gone."""

    def __init__(self, support: CgroupSupport, name: str) -> None:
        self.support = support
        self.name = f"{PREFIX}{os.getpid()}-{name}"
        self.memory = support.memory / self.name if support.memory else None
        self.pids = support.pids / self.name if support.pids else None
        self.cpu = support.cpu / self.name if support.cpu else None
        self.dirs = list(dict.fromkeys(path for path in (self.memory, self.pids, self.cpu) if path is not None))

    @classmethod
    def create(cls, support: CgroupSupport, name: str, memory_bytes: int, max_processes: int) -> SandboxCgroup:
        cgroup = cls(support, name)
        try:
            for directory in cgroup.dirs:
                directory.mkdir()
            if cgroup.memory is not None:
                cgroup._limit_memory(cgroup.memory, memory_bytes)
            if cgroup.pids is not None:
                (cgroup.pids / "pids.max").write_text(str(max_processes))
        except OSError:
            cgroup.remove()
            raise
        return cgroup

    def _limit_memory(self, directory: Path, memory_bytes: int) -> None:
        if self.support.version == 2:
            (directory / "memory.max").write_text(str(memory_bytes))
            swap = directory / "memory.swap.max"
            if swap.exists():
                swap.write_text("0")
            return
        (directory / "memory.limit_in_bytes").write_text(str(memory_bytes))
        with_swap = directory / "memory.memsw.limit_in_bytes"  # present where swap is accounted
        if with_swap.exists():
            with_swap.write_text(str(memory_bytes))

    def add(self, pid: int) -> None:
        for directory in self.dirs:
            (directory / "cgroup.procs").write_text(str(pid))

    def processes(self) -> list[int]:
        if not self.dirs:
            return []
        try:
            return [int(pid) for pid in (self.dirs[0] / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def oom_kills(self) -> int:
        """Processes the kernel killed for memory in this cgroup so far."""
        if self.memory is None:
            return 0
        events = "memory.events" if self.support.version == 2 else "memory.oom_control"
        return _read_counter(self.memory / events, "oom_kill")

    def forks_refused(self) -> int:
        """Forks refused because the process limit was reached, so far."""
        return _read_counter(self.pids / "pids.events", "max") if self.pids is not None else 0

    def cpu_seconds(self) -> float | None:
        if self.cpu is None:
            return None
        try:
            if self.support.version == 2:
                return _read_counter(self.cpu / "cpu.stat", "usage_usec") / 1e6
            return int((self.cpu / "cpuacct.usage").read_text()) / 1e9
        except (OSError, ValueError):
            return None

    def kill(self) -> None:
        """SIGKILL to every process in the cgroup, until none is left (bounded: a second at most)."""
        if self.dirs and self.support.version == 2 and (self.dirs[0] / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                (self.dirs[0] / "cgroup.kill").write_text("1")
        for _ in range(100):
            alive = self.processes()
            if not alive:
                return
            for pid in alive:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def remove(self) -> None:
        """Removes the cgroup directories once empty; a process still exiting gets a moment to leave."""
        for directory in self.dirs:
            for _ in range(50):
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
