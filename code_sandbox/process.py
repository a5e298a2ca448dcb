"""One sandbox as an OS process: started with its limits already in force, measured, and killed whole.

The limits must hold before bwrap runs, and Python can set them in a child only through `preexec_fn`,
which is unsafe in a threaded worker. So the sandbox starts behind a gate: a shell that waits for one
line on a pipe before it execs bwrap. Meanwhile the worker sets the gate's rlimits (`prlimit`) and puts
it in the sandbox's cgroup; bwrap and everything the code starts inherit both.

Killing it: bwrap's processes share a process group outside and a PID namespace inside whose first
process dies with bwrap (`--die-with-parent`), and the kernel kills every process of a namespace whose
first one dies; the cgroup, where there is one, is emptied as well.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import signal
import subprocess
import uuid
from collections.abc import Sequence
from pathlib import Path

from code_sandbox.bubblewrap import Sandbox, bwrap_command
from code_sandbox.cgroups import SandboxCgroup
from code_sandbox.limits import SandboxLimits

TMP_BYTES_CEILING = 256 * 1024 * 1024
_GATE = 'read -r go && exec "$@" </dev/null'
"""Run by /bin/sh with the gate's pipe as stdin and bwrap's command as "$@"; the sandbox's stdin is empty."""


class SandboxProcess:
    """A started sandbox: its bwrap process (a group leader), its cgroup if any, its pipes."""

    def __init__(self, process: asyncio.subprocess.Process, cgroup: SandboxCgroup | None) -> None:
        self.process = process
        self.cgroup = cgroup

    @classmethod
    async def start(
        cls,
        sandbox: Sandbox,
        workspace: Path,
        argv: Sequence[str],
        limits: SandboxLimits,
        *,
        read_only: Sequence[tuple[Path, str]] = (),
        pass_fds: Sequence[int] = (),
        per_process_cpu: bool = False,
    ) -> SandboxProcess:
        """Starts `argv` in the sandbox of `workspace`, stdout and stderr piped, stdin empty. `per_process_cpu`
        also sets RLIMIT_CPU (a one-shot command: a process's lifetime is the call's)."""
        tmp_bytes = min(limits.memory_bytes, TMP_BYTES_CEILING)
        command = bwrap_command(sandbox, workspace, argv, tmp_bytes=tmp_bytes, read_only=read_only)
        cgroup = None
        if sandbox.cgroups.version is not None:
            cgroup = await asyncio.to_thread(
                SandboxCgroup.create, sandbox.cgroups, uuid.uuid4().hex[:12], limits.memory_bytes, limits.max_processes
            )
        gate_read, gate_write = os.pipe()
        try:
            process = await asyncio.create_subprocess_exec(
                "/bin/sh",
                "-c",
                _GATE,
                "sandbox-gate",
                *command,
                stdin=gate_read,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=pass_fds,
                start_new_session=True,
                limit=1 << 20,
            )
        except BaseException:
            os.close(gate_write)
            if cgroup is not None:
                cgroup.remove()
            raise
        finally:
            os.close(gate_read)
        started = cls(process, cgroup)
        try:
            _limit(process.pid, limits, sandbox, per_process_cpu)
            if cgroup is not None:
                cgroup.add(process.pid)
            os.write(gate_write, b"go\n")
        except BaseException:
            await started.close()
            raise
        finally:
            os.close(gate_write)
        return started

    @property
    def pid(self) -> int:
        return self.process.pid

    def processes(self) -> list[int]:
        """Host pids of every process of the sandbox still alive (or not yet reaped), bwrap's included."""
        if self.cgroup is not None:
            return self.cgroup.processes()
        return [pid for pid, _ in _descendants(self.pid)]

    def cpu_seconds(self) -> float:
        """CPU time used so far by all the sandbox's processes and threads, the exited ones included."""
        measured = self.cgroup.cpu_seconds() if self.cgroup is not None else None
        if measured is not None:
            return measured
        return sum(ticks for _, ticks in _descendants(self.pid)) / os.sysconf("SC_CLK_TCK")

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)
        if self.cgroup is not None:
            self.cgroup.kill()

    async def close(self) -> None:
        """Kills whatever is left, reaps bwrap and removes the cgroup: nothing of the sandbox outlives this."""
        self.kill()
        await self.process.wait()
        if self.cgroup is not None:
            await asyncio.to_thread(self._remove_cgroup, self.cgroup)

    @staticmethod
    def _remove_cgroup(cgroup: SandboxCgroup) -> None:
        cgroup.kill()
        cgroup.remove()


def _limit(pid: int, limits: SandboxLimits, sandbox: Sandbox, per_process_cpu: bool) -> None:
    """The gate's rlimits, soft and hard alike (the code cannot raise a hard limit back)."""

    def both(kind: int, value: int) -> None:
        resource.prlimit(pid, kind, (value, value))

    both(resource.RLIMIT_FSIZE, limits.file_size_bytes)
    both(resource.RLIMIT_CORE, 0)
    if per_process_cpu:
        both(resource.RLIMIT_CPU, max(1, round(limits.cpu_seconds)) + 1)  # the watchdog's backstop
    if sandbox.cgroups.memory is None:
        both(resource.RLIMIT_AS, limits.memory_bytes)
    if sandbox.cgroups.pids is None and os.geteuid() != 0:
        # RLIMIT_NPROC counts every process of the worker's user, so the sandbox gets its own on top of those;
        # root is exempt from it, so as root only a pids cgroup limits processes.
        both(resource.RLIMIT_NPROC, _processes_of_user(os.getuid()) + limits.max_processes)


def _processes_of_user(uid: int) -> int:
    count = 0
    for entry in os.scandir("/proc"):
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and entry.stat().st_uid == uid:
                count += 1
    return count


def _descendants(root: int) -> list[tuple[int, int]]:
    """(pid, CPU ticks including reaped children's) of `root` and every process below it, from /proc."""
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        pid = int(entry.name)
        parents[pid] = int(fields[1])
        ticks[pid] = sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    found = [root] if root in ticks else []
    for pid in found:
        found += [child for child, parent in parents.items() if parent == pid]
    return [(pid, ticks[pid]) for pid in found]
