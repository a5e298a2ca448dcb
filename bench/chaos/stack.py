"""The pieces a chaos run starts and kills: Temporal, the model server, APIs and workers, and the killer."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

import serve
from bench.common import (
    ModelServer,
    free_port,
    log,
    models_env,
    spawn,
    start_model_server,
    stop_process,
    wait_for_http,
    wait_for_port,
)
from configuration.loading import load_settings

# --- The stack, piece by piece -------------------------------------------------------------------

MODEL = "bench"
"""The model name the chaos agent uses (a bench/model_server.py behind it)."""


@dataclass
class ChaosStack:
    """Dev server, model server, API and a worker that can be killed and restarted."""

    workdir: Path
    model_ttft_ms: float
    model_token_ms: float
    api_count: int = 1
    worker_count: int = 1
    store_url: str | None = None
    """None: a SQLite file in the data dir."""
    worker_in_api: bool = False
    temporal_port: int = field(default_factory=free_port)
    ui_port: int = field(default_factory=free_port)
    model: ModelServer | None = None
    temporal: subprocess.Popen[bytes] | None = None
    api_ports: list[int] = field(default_factory=list)
    apis: list[subprocess.Popen[bytes]] = field(default_factory=list)
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    worker_started_at: list[float] = field(default_factory=list)
    worker_kills: int = 0
    api_kills: int = 0

    @property
    def api_urls(self) -> list[str]:
        return [f"http://127.0.0.1:{port}" for port in self.api_ports]

    @property
    def api_url(self) -> str:
        return self.api_urls[0]

    @property
    def temporal_address(self) -> str:
        return f"127.0.0.1:{self.temporal_port}"

    @property
    def task_queue(self) -> str:
        return load_settings(self.env()).task_queue

    def env(self) -> dict[str, str]:
        assert self.model is not None
        return {
            "DA_DATA_DIR": str(self.workdir / "data"),
            "DA_TEMPORAL_PORT": str(self.temporal_port),
            "DA_TEMPORAL_UI_PORT": str(self.ui_port),
            "TEMPORAL_ADDRESS": self.temporal_address,
            "DA_MODELS": models_env({MODEL: self.model}),
            "DA_RATE_LIMIT_PER_MINUTE": "0",  # measures the runtime, not the per-key limiter
            "DA_WORKER_IN_API": str(self.worker_in_api).lower(),
            **({"DA_STORE_URL": self.store_url} if self.store_url else {}),
        }

    def start(self) -> None:
        self.model = start_model_server(self.model_ttft_ms, self.model_token_ms, self.workdir / "model.log")
        settings = load_settings(self.env())
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        # serve.py's own command line, so the dev server is configured exactly as `make run`'s.
        command = [*serve.dev_server_command(settings), "--headless"]
        self.temporal = spawn(command, self.workdir / "temporal.log", self.env())
        wait_for_port(self.temporal_port, self.temporal, 60)
        self.workers = [self.spawn_worker(n) for n in range(self.worker_count)]
        self.worker_started_at = [time.monotonic()] * self.worker_count
        if self.workers:
            self.wait_for_worker(0)
        self.api_ports = [free_port() for _ in range(self.api_count)]
        self.apis = [self.spawn_api(n) for n in range(self.api_count)]
        for number in range(self.api_count):
            self.wait_for_api(number)
        log(f"stack up: APIs {self.api_urls}, Temporal 127.0.0.1:{self.temporal_port} (logs in {self.workdir})")

    def wait_for_worker(self, number: int, seconds: float = 60) -> None:
        """Until Temporal sees the worker poll. It has created the store's tables by then, so the API
        does not create them at the same moment (on a fresh SQLite file that race can fail one)."""

        async def wait() -> bool:
            client = await Client.connect(self.temporal_address)
            return await wait_until_polling(client, self.task_queue, self.workers[number].pid, seconds)

        if not asyncio.run(wait()):
            raise RuntimeError(f"the worker did not poll within {seconds:.0f}s; see {self.workdir / 'worker.log'}")

    def wait_for_api(self, number: int) -> None:
        assert self.temporal is not None
        wait_for_http(f"{self.api_urls[number]}/v1/health", [self.apis[number], self.temporal], 90)

    def spawn_worker(self, number: int) -> subprocess.Popen[bytes]:
        return spawn([sys.executable, "worker.py"], self.workdir / f"worker{number}.log", self.env())

    def spawn_api(self, number: int) -> subprocess.Popen[bytes]:
        port = str(self.api_ports[number])
        uvicorn = [sys.executable, "-m", "uvicorn", "api.app:app", "--host", "127.0.0.1", "--port", port]
        return spawn(uvicorn, self.workdir / f"api{number}.log", self.env())

    def kill_and_restart_worker(self, number: int) -> None:
        """SIGKILL: no graceful shutdown, in-flight activities and workflow tasks just vanish."""
        self.workers[number].send_signal(signal.SIGKILL)
        self.workers[number].wait(timeout=10)
        self.worker_kills += 1
        self.worker_started_at[number] = time.monotonic()
        self.workers[number] = self.spawn_worker(number)

    def kill_and_restart_api(self, number: int) -> None:
        """SIGKILL mid-request: open streams break, a create may be cut between its two steps."""
        self.apis[number].send_signal(signal.SIGKILL)
        self.apis[number].wait(timeout=10)
        self.api_kills += 1
        self.apis[number] = self.spawn_api(number)

    def stop(self) -> None:
        for process, signum in (
            *((api, signal.SIGTERM) for api in self.apis),
            *((worker, signal.SIGINT) for worker in self.workers),
            (self.temporal, signal.SIGTERM),
        ):
            if process is not None:
                stop_process(process, signum, 20)
        if self.model is not None:
            stop_process(self.model.process, signal.SIGTERM, 10)


async def poller_pids(client: Client, task_queue: str) -> set[int]:
    """Pids of the workers Temporal has seen polling the queue; the SDK's default identity is pid@host."""
    request = DescribeTaskQueueRequest(
        namespace=client.namespace,
        task_queue=TaskQueue(name=task_queue),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    )
    identities = [poller.identity for poller in (await client.workflow_service.describe_task_queue(request)).pollers]
    return {int(head) for head, _, _ in (i.partition("@") for i in identities) if head.isdigit()}


async def wait_until_polling(
    client: Client, task_queue: str, pid: int, seconds: float, done: asyncio.Event | None = None
) -> bool:
    """Until the worker with this pid polls (False if it has not after `seconds`, or we are done)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not (done and done.is_set()):
        if pid in await poller_pids(client, task_queue):
            return True
        await asyncio.sleep(0.1)
    return False


async def wait_until_healthy(url: str, seconds: float, done: asyncio.Event) -> bool:
    """Until the API answers its health check (False if it has not after `seconds`, or we are done)."""
    deadline = time.monotonic() + seconds
    async with httpx.AsyncClient(timeout=2) as client:
        while time.monotonic() < deadline and not done.is_set():
            try:
                if (await client.get(f"{url}/v1/health")).status_code == 200:
                    return True
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.1)
    return False


@dataclass
class Killer:
    """Kills a process `every` seconds after it is ready, then restarts it: the workers in turn (each
    once it polls, so each gets to do some work: a busy 2-core box can take longer than a short
    interval just to start one), or with `anything` the workers and the APIs (once healthy) in turn."""

    stack: ChaosStack
    client: Client
    task_queue: str
    every: float
    max_kills: int
    anything: bool = False
    ready_seconds: list[float] = field(default_factory=list)
    """For each worker started: how long from spawn until Temporal saw it poll."""

    def _victims(self) -> list[tuple[str, int]]:
        workers = [("worker", n) for n in range(len(self.stack.workers))]
        apis = [("api", n) for n in range(len(self.stack.apis))] if self.anything else []
        return [victim for pair in zip(workers, apis, strict=False) for victim in pair] + (
            workers[len(apis) :] + apis[len(workers) :]
        )

    async def run(self, done: asyncio.Event) -> None:
        stack = self.stack
        victims = self._victims()
        kills = 0
        while not done.is_set() and (self.max_kills <= 0 or kills < self.max_kills):
            kind, number = victims[kills % len(victims)]
            if kind == "worker":
                pid = stack.workers[number].pid
                if await wait_until_polling(self.client, self.task_queue, pid, 60, done):
                    self.ready_seconds.append(time.monotonic() - stack.worker_started_at[number])
                elif not done.is_set():
                    log(f"worker {pid} did not poll within 60 s; killing it anyway")
            else:  # every API up first: killing one while another restarts would leave clients none
                for url in stack.api_urls:
                    if not await wait_until_healthy(url, 60, done) and not done.is_set():
                        log(f"API {url} did not answer within 60 s; killing anyway")
            try:
                await asyncio.wait_for(done.wait(), timeout=self.every)
            except TimeoutError:
                restart = stack.kill_and_restart_worker if kind == "worker" else stack.kill_and_restart_api
                await asyncio.to_thread(restart, number)
                kills += 1
                log(f"{kind} {number} killed and restarted ({kills})")
