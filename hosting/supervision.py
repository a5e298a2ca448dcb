"""What keeps serve.py's starts from fighting each other: a pidfile in the data directory and a port check.

Children die with serve.py on Linux (hosting/die_with_parent.py). Wherever that cannot hold, the pidfile
(`serve.pid`) names serve.py and the children it runs; the next start on the same data directory
refuses to run beside a live serve.py, and stops the children an earlier one left behind before it
begins. A process is taken to be the one recorded only when its start time matches too, so a pid the
system has since handed to another program is never signalled.

Then the ports: one held by anything else is a start that cannot work, said in one line, rather than
children restarted forever on "address already in use".
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import time
from contextlib import suppress
from dataclasses import asdict, dataclass
from pathlib import Path

log = logging.getLogger("serve")

PIDFILE = "serve.pid"
STOP_GRACE_SECONDS = 10.0
EXIT_CANNOT_START = 78
"""A child's exit status for "cannot start: a configuration to fix" (EX_CONFIG): serve.py does not
start such a child again and again, it stops and says so."""


class CannotStart(SystemExit):
    """serve.py cannot start; the message says why in one line, and the exit status is 1."""


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat), "" where there is no /proc,
    None when there is no such process, or only its exit status is left (a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None if Path("/proc/self/stat").exists() else ""
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] in ("Z", "X") else fields[19]  # fields 3 (state) and 22 (starttime)


@dataclass(frozen=True)
class RecordedProcess:
    pid: int
    started: str
    name: str

    @classmethod
    def of(cls, pid: int, name: str) -> RecordedProcess:
        return cls(pid=pid, started=_start_time(pid) or "", name=name)

    def alive(self) -> bool:
        started = _start_time(self.pid)
        if started is None or (self.started and started != self.started):
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


class Pidfile:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / PIDFILE

    def _read(self) -> tuple[RecordedProcess | None, list[RecordedProcess]]:
        try:
            recorded = json.loads(self.path.read_text())
            supervisor = RecordedProcess(**recorded["supervisor"])
            children = [RecordedProcess(**child) for child in recorded["children"]]
        except FileNotFoundError:
            return None, []
        except (OSError, ValueError, KeyError, TypeError):
            log.warning("%s is unreadable; ignoring it", self.path)
            return None, []
        return supervisor, children

    def take_over(self) -> None:
        """Refuse to start beside a live serve.py of this data directory; stop the children an earlier
        one left running."""
        supervisor, children = self._read()
        if supervisor is not None and supervisor.pid != os.getpid() and supervisor.alive():
            raise CannotStart(
                f"serve.py is already running on the data directory {self.path.parent} (pid {supervisor.pid}); "
                "stop it first, or give this one another DA_DATA_DIR"
            )
        left = [child for child in children if child.alive()]
        if left:
            log.warning(
                "stopping what an earlier start left running: %s",
                ", ".join(f"{child.name} (pid {child.pid})" for child in left),
            )
            stop_recorded(left)
        with suppress(FileNotFoundError):
            self.path.unlink()

    def record(self, children: list[tuple[str, subprocess.Popen[bytes]]]) -> None:
        """Write this serve.py and its running children (atomically: a reader sees the old or the new)."""
        body = {
            "supervisor": asdict(RecordedProcess.of(os.getpid(), "serve.py")),
            "children": [asdict(RecordedProcess.of(p.pid, name)) for name, p in children if p.poll() is None],
        }
        partial = self.path.with_suffix(".pid.partial")
        partial.write_text(json.dumps(body))
        partial.replace(self.path)

    def remove(self) -> None:
        with suppress(FileNotFoundError):
            self.path.unlink()


def stop_recorded(processes: list[RecordedProcess]) -> None:
    """SIGTERM, then SIGKILL whatever still runs after the grace period."""
    for process in processes:
        with suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    while any(process.alive() for process in processes) and time.monotonic() < deadline:
        time.sleep(0.1)
    for process in processes:
        if process.alive():
            with suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)


def port_taken(host: str, port: int) -> bool:
    """Whether something listens on host:port (a port in TIME_WAIT after our own children is free)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


Ports = dict[str, tuple[str, int, str]]
"""What listens → (host, port, the setting that moves it)."""


def require_free_ports(ports: Ports) -> None:
    """Raises CannotStart naming every one of `ports` something else holds."""
    taken = [(what, host, port, setting) for what, (host, port, setting) in ports.items() if port_taken(host, port)]
    if taken:
        held = "; ".join(f"{what} port {host}:{port} ({setting})" for what, host, port, setting in taken)
        raise CannotStart(f"cannot start: in use by another process: {held}; stop that process or move the port")
