"""The service as separate OS processes — dev server, worker, API — that tests kill with SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import httpx
from temporalio.client import Client

from configuration.loading import load_settings
from hosting.temporal_connection import connect_temporal
from serve import dev_server_command
from tests.support.scripted_model import ALLOWED_HOST, ScriptedModel, ThreadedServer
from tests.support.stack import SCRIPTED_KEY, SCRIPTED_KEY_ENV, SCRIPTED_MODEL, free_port

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[2]
START_SECONDS = 180
"""Upper bound on a service coming up. Waits poll every 0.1 s and end as soon as the condition holds, so a
generous bound costs nothing on a quiet machine; on a loaded 2-core one, where `make test` runs these tests
beside the rest of the suite, a Python process's imports alone can take tens of seconds."""
EVENT_SECONDS = 120
"""Upper bound on something a test waits for once the services are up (a model request, say)."""


def wait_until(check: Callable[[], T | None], what: str, seconds: float = START_SECONDS) -> T:
    """`check()`'s first truthy value, polled every 0.1 s for at most `seconds`: how a test waits for state that
    something else reaches eventually (a service up, a row written by a later activity, Temporal's visibility).
    An HTTP or OS error counts as not yet; the last one is named if the wait runs out."""
    deadline = time.monotonic() + seconds
    failure: Exception | None = None
    while time.monotonic() < deadline:
        try:
            if found := check():
                return found
        except (httpx.HTTPError, OSError) as error:
            failure = error
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen within {seconds:.0f} s" + (f" (last: {failure!r})" if failure else ""))


class ProcessStack:
    def __init__(self, data_dir: Path, extra_env: dict[str, str] | None = None, log_dir: Path | None = None) -> None:
        """`extra_env` is added to every process's environment; with `log_dir`, the worker's and the
        API's output go to `worker.log` and `api.log` there (appended across restarts)."""
        self._log_dir = log_dir
        self.data_dir = data_dir
        self.model = ScriptedModel()
        self._model_server = ThreadedServer(self.model.app(), free_port()).start()
        self.temporal_port, self.api_port = free_port(), free_port()
        self.env = {
            **os.environ,
            "DA_DATA_DIR": str(data_dir),
            "DA_TEMPORAL_PORT": str(self.temporal_port),
            "DA_TEMPORAL_UI_PORT": str(free_port()),
            "TEMPORAL_ADDRESS": f"127.0.0.1:{self.temporal_port}",
            "DA_TASK_QUEUE": "faults",
            "DA_OUTBOUND_ALLOW": ALLOWED_HOST,
            SCRIPTED_KEY_ENV: SCRIPTED_KEY,
            "DA_MODELS": json.dumps(
                {
                    SCRIPTED_MODEL: {
                        "provider": "openai",
                        "base_url": f"{self._model_server.url}/v1",
                        "api_key_env": SCRIPTED_KEY_ENV,
                    }
                }
            ),
            **(extra_env or {}),
        }
        self.temporal: subprocess.Popen[bytes] | None = None
        self.worker: subprocess.Popen[bytes] | None = None
        self.api: subprocess.Popen[bytes] | None = None
        try:
            self.start_temporal()
            self.start_worker()
            self.start_api()
        except BaseException:  # a start that failed (a service not up in time) leaves none of them running
            self.close()
            raise

    @property
    def model_url(self) -> str:
        return self._model_server.url

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def _spawn(self, command: list[str], log_name: str | None = None, **env: str) -> subprocess.Popen[bytes]:
        environment = {**self.env, **env}
        if self._log_dir is None or log_name is None:
            return subprocess.Popen(
                command, cwd=ROOT, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
        with (self._log_dir / log_name).open("ab") as output:
            return subprocess.Popen(command, cwd=ROOT, env=environment, stdout=output, stderr=subprocess.STDOUT)

    def start_temporal(self) -> None:
        self.temporal = self._spawn(dev_server_command(load_settings(self.env)))
        wait_until(lambda: httpx.get(f"http://127.0.0.1:{self.env['DA_TEMPORAL_UI_PORT']}", timeout=1), "Temporal up")

    def start_worker(self, **env: str) -> None:
        """Start a worker; `env` adds variables to its environment (a fault point)."""
        self.worker = self._spawn([sys.executable, "worker.py"], "worker.log", **env)

    def start_api(self, **env: str) -> None:
        """Start the API; `env` adds variables to its environment (a fault point, a setting)."""
        self.api = self._spawn(
            [sys.executable, "-m", "uvicorn", "api.app:app", "--port", str(self.api_port)], "api.log", **env
        )
        wait_until(lambda: httpx.get(f"{self.url}/v1/health", timeout=1).status_code == 200, "API healthy")

    def wait_for_model_requests(self, count: int, seconds: float = EVENT_SECONDS) -> None:
        """Block until the scripted model has received `count` requests: a model call is under way."""
        wait_until(lambda: len(self.model.requests) >= count, f"{count} model requests", seconds)

    async def temporal_client(self) -> Client:
        """A fresh client of this stack's dev server (one made before a restart of it would be stale)."""
        return await connect_temporal(load_settings(self.env))

    @staticmethod
    def kill(process: subprocess.Popen[bytes] | None) -> None:
        assert process is not None and process.poll() is None, "process to kill is not running"
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)

    def close(self) -> None:
        for process in (self.api, self.worker, self.temporal):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait(timeout=10)
        self._model_server.stop()
