"""A wake-up from the process that wrote a turn's events to the API processes that stream them, on one host.

The API's event hub finds other processes' writes by polling the store, 2 ms after events and backing
off to 20 ms while a turn is quiet: a turn's first delta and its final event each waited half that on
average. Processes sharing a data directory (`make run`'s worker and API) meet in `<data_dir>/wake`:
each API binds a datagram socket there, and every write of events sends each socket one byte. The
byte carries nothing: the hub polls at once and reads what is new from the store as before, so a lost
or late datagram only leaves the poll to its timer (which stays on), and the store stays the one
source of events. Processes on other hosts see no sockets and poll as before.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

WAKE_DIR_NAME = "wake"
RESCAN_SECONDS = 1.0
"""How often a writer lists the directory again for APIs that started (or stopped) since."""


def wake_dir(data_dir: Path) -> Path:
    return data_dir / WAKE_DIR_NAME


class WakeSender:
    """Sends one datagram to every API socket in the directory but its own process's (`own`: that API's
    hub has the events already); never blocks, never raises."""

    def __init__(self, directory: Path, own: Path | None = None) -> None:
        self._directory = directory
        self._own = str(own) if own is not None else None
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._socket.setblocking(False)
        self._targets: list[str] = []
        self._scanned_at = float("-inf")

    def __call__(self, _written: object) -> None:
        """What was written does not matter: the byte only says "poll now"."""
        now = time.monotonic()
        if now - self._scanned_at >= RESCAN_SECONDS:
            self._scanned_at = now
            try:
                found = (str(path) for path in self._directory.glob("*.sock"))
                self._targets = [path for path in found if path != self._own]
            except OSError:
                self._targets = []
        for target in self._targets:
            try:
                self._socket.sendto(b"w", target)
            except ConnectionRefusedError:  # nobody reads it: an API that was killed left its socket
                Path(target).unlink(missing_ok=True)
            except OSError:  # an API whose buffer is full (it is awake anyway), or a path gone meanwhile
                continue

    def close(self) -> None:
        self._socket.close()


class WakeReceiver:
    """This API's socket in the directory; calls `on_wake` (on the running loop) when a datagram comes."""

    def __init__(self, directory: Path, on_wake: Callable[[], None]) -> None:
        self._directory = directory
        self._on_wake = on_wake
        self._socket: socket.socket | None = None
        self._path: Path | None = None

    @property
    def path(self) -> Path | None:
        """This API's socket, once open."""
        return self._path

    def open(self) -> bool:
        """Bind and start reading; False (and a log line) where the directory or socket cannot be made:
        streams then rely on polling alone."""
        path = self._directory / f"api-{os.getpid()}-{uuid.uuid4().hex[:8]}.sock"
        receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            self._directory.mkdir(parents=True, exist_ok=True)
            receiver.bind(str(path))
        except OSError as error:
            receiver.close()
            log.info("event wake-ups off (%s): streams poll the store only", error)
            return False
        receiver.setblocking(False)
        self._socket, self._path = receiver, path
        asyncio.get_running_loop().add_reader(receiver.fileno(), self._drain)
        return True

    def _drain(self) -> None:
        assert self._socket is not None
        try:
            while self._socket.recv(64):
                pass
        except BlockingIOError:
            pass
        except OSError:
            return
        self._on_wake()

    def close(self) -> None:
        if self._socket is None:
            return
        asyncio.get_running_loop().remove_reader(self._socket.fileno())
        self._socket.close()
        self._socket = None
        if self._path is not None:
            self._path.unlink(missing_ok=True)
