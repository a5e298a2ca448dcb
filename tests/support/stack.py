"""The real stack for tests: a Temporal dev server, a worker, the API over HTTP, a scripted model.

Temporal's environment and the worker run on an event loop in a background thread, so tests
can be plain synchronous functions driving the official (synchronous) llama-stack client.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import socket
import threading
import uuid
from collections.abc import Coroutine, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from cryptography.fernet import Fernet
from temporalio.client import Client, WorkflowFailureError, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from api.app import create_app
from configuration.loading import load_settings
from configuration.settings import Settings
from domain.content import CompletionMessage, UserMessage
from domain.turns import InferenceStep, TurnStatus
from hosting.workers import Workers
from knowledge.engines import vector_index
from serve import DEV_SERVER_TUNING, temporal_binary
from store.database import open_database, sqlite_module
from store.repository import Store
from store.upgrade import upgrade_store
from tests.support.sandbox import sandboxed_runner
from tests.support.scripted_model import ALLOWED_HOST, GUARD_MODEL, ScriptedModel, ThreadedServer
from worker import build_worker
from workflows import search_attributes
from workflows.retention import SCHEDULE_ID

T = TypeVar("T")

SCRIPTED_MODEL = "scripted"
PRICED_MODEL = "scripted-priced"
"""The scripted model at 1 US cent a token, input and output alike (its tokens are words): spend_control tests."""
SCRIPTED_KEY = "scripted-secret-key-0123456789"
TOOL_CALL_DEADLINE = 15


def _ephemeral_ports_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


LOWEST_TEST_PORT = 10000
PORT_SLICES = 8
PORT_SLICE_OFFSET_ENV = "DA_TEST_PORT_SLICE_OFFSET"
"""Where a pytest run's slices start: `make test` runs the `processes` tests beside the rest, in a second
pytest run whose xdist workers are numbered from gw0 too; this offset gives them slices of their own."""
_handed_out: set[int] = set()


def free_port() -> int:
    """A loopback port free now, below the kernel's ephemeral range and in this xdist worker's own slice of it.

    A port from bind(0) is an ephemeral one: once released, any outgoing connection (the dev server's own
    gRPC connections, say) may take it as its source port, and a service restarted on it then cannot bind
    (the likely reason a restart in tests/operations/test_serve.py once never became healthy in CI). Slices keep the
    parallel workers, and the two pytest runs of `make test` (PORT_SLICE_OFFSET_ENV), from handing out the
    same port."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    index = (int(worker) if worker.isdigit() else 0) + int(os.environ.get(PORT_SLICE_OFFSET_ENV, "0"))
    width = (_ephemeral_ports_start() - LOWEST_TEST_PORT) // PORT_SLICES
    first = LOWEST_TEST_PORT + index % PORT_SLICES * width
    for _ in range(width):
        port = random.randrange(first, first + width)
        if port in _handed_out:
            continue
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise RuntimeError(f"no free port in {first}..{first + width - 1}")


class BackgroundLoop:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 120) -> T:
        future: Future[T] = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        return future.result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)


DEV_SERVER_STARTUP_TIMEOUT = timedelta(seconds=60)
"""temporalio waits 5 s for the dev server it starts: on a loaded CI machine, several servers starting at once
can take longer, which failed a whole test file on a start that only needed a few seconds more."""


class Stack:
    def __init__(self, data_dir: Path, store_url: str | None = None) -> None:
        """Start everything; `store_url` defaults to a SQLite file in `data_dir`."""
        self.model = ScriptedModel()
        self.model_server = ThreadedServer(self.model.app(), free_port()).start()
        self.background = BackgroundLoop()
        self.environment: WorkflowEnvironment = self.background.run(
            WorkflowEnvironment.start_local(
                dev_server_existing_path=temporal_binary(),
                data_converter=pydantic_data_converter,
                dev_server_log_level="error",
                dev_server_extra_args=DEV_SERVER_TUNING,
                search_attributes=search_attributes.ALL,
                dev_server_startup_timeout=DEV_SERVER_STARTUP_TIMEOUT,
            )
        )
        os.environ[SCRIPTED_KEY_ENV] = SCRIPTED_KEY
        self.settings: Settings = load_settings(
            {
                "DA_DATA_DIR": str(data_dir),
                "TEMPORAL_ADDRESS": self.environment.client.service_client.config.target_host,
                "DA_TASK_QUEUE": f"tests-{os.getpid()}",
                "DA_MODELS": json.dumps(
                    {
                        name: {
                            "provider": "openai",
                            "base_url": f"{self.model_server.url}/v1",
                            "api_key_env": SCRIPTED_KEY_ENV,
                            "timeout_seconds": 5,
                        }
                        for name in (SCRIPTED_MODEL, GUARD_MODEL)
                    }
                    | {
                        PRICED_MODEL: {
                            "provider": "openai",
                            "base_url": f"{self.model_server.url}/v1",
                            "api_key_env": SCRIPTED_KEY_ENV,
                            "timeout_seconds": 5,
                            "pricing": {"input": 10_000, "output": 10_000},
                        }
                    }
                ),
                "DA_SHIELDS": json.dumps(
                    {
                        "keyword-guard": {"provider": "regex", "patterns": [r"\bbomb\b"]},
                        "llama-guard": {"provider": "llama_guard", "model": GUARD_MODEL},
                    }
                ),
                # Models are configured, so the offline model is off unless asked for; the suite uses it.
                "DA_OFFLINE_MODEL": "true",
                # The suite's own traffic is not what the limits are about (tests/security/test_limits.py is).
                "DA_RATE_LIMIT_PER_MINUTE": "0",
                "DA_MAX_INFER_ITERS": "1000",
                "DA_OUTBOUND_ALLOW": ALLOWED_HOST,
                "DA_TOOL_CALL_DEADLINE": str(TOOL_CALL_DEADLINE),
                "DA_CREDENTIALS_KEY": Fernet.generate_key().decode(),
                # Webhook retries within seconds, and the outbox swept often (tests/webhooks/).
                "DA_WEBHOOK_RETRY_DELAYS": "0.2,0.5,1,1,1",
                "DA_WEBHOOK_SWEEP_INTERVAL": "1",
                **({"DA_STORE_URL": store_url} if store_url else {}),
            }
        )
        self.background.run(upgrade_store(self.settings.store_url))
        self._database = open_database(self.settings.store_url)
        self.store = Store(self._database, vector_index(self.settings.store_url))
        self._worker: Workers | None = None
        self._worker_task: asyncio.Task[None] | None = None
        self.start_worker()
        self.api = ThreadedServer(create_app(self.settings), free_port()).start()

    @property
    def client(self) -> Client:
        return self.environment.client

    @property
    def base_url(self) -> str:
        return self.api.url

    @contextmanager
    def other_api(self, settings: Settings) -> Iterator[str]:
        """A second API process-alike with its own settings, on the same Temporal and store; yields its URL."""
        server = ThreadedServer(create_app(settings), free_port()).start()
        try:
            yield server.url
        finally:
            server.stop()
            if settings.worker_in_api:
                self.background.run(self._forget_retention_schedule())

    async def _forget_retention_schedule(self) -> None:
        """An API hosting a worker puts the retention schedule in place with its own task queue (as worker.py does),
        which no worker polls once it has gone: a sweep the schedule started there would never end, and the
        schedule would skip every later sweep behind it. The rest of the suite on this stack has no schedule, as
        tests/operations/test_retention.py's fixture leaves it."""
        with contextlib.suppress(RPCError):  # none put in place
            await self.client.get_schedule_handle(SCHEDULE_ID).delete()

    def start_worker(self, settings: Settings | None = None) -> None:
        """The stack's worker, with the stack's settings or these (a worker of another configuration)."""

        async def start() -> None:
            self._worker = build_worker(self.client, settings or self.settings, self.store, sandboxed_runner())
            self._worker_task = asyncio.create_task(self._worker.run())

        self.background.run(start())

    def stop_worker(self) -> None:
        async def stop() -> None:
            assert self._worker is not None and self._worker_task is not None
            await self._worker.shutdown()
            await self._worker_task

        self.background.run(stop())

    def closed_history(self, workflow_id: str) -> WorkflowHistory:
        """The history of the workflow's last run, read once that run has closed. A response or a stream ends when
        an activity has written the turn's end to the store, which can be before Temporal records that activity's
        completion (and, for a retried one, its start event with the failure) and the workflow's own end."""

        async def read() -> WorkflowHistory:
            handle = self.client.get_workflow_handle(workflow_id)
            with contextlib.suppress(WorkflowFailureError):  # a failed run has closed too
                await handle.result()
            return await handle.fetch_history()

        return self.background.run(read())

    def store_text(self) -> str:
        """Every row of every table of the SQLite store, and its files as bytes: where a secret must not be."""
        path = Path(self.settings.store_url.removeprefix("sqlite+aiosqlite:///"))
        with contextlib.closing(sqlite_module().connect(path)) as db:
            # Not the knowledge index's virtual tables (sqlite-vec is not loaded here); their shadow tables are.
            tables = [
                row[0]
                for row in db.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL TABLE%'"
                )
            ]
            rows = [repr(db.execute(f'SELECT * FROM "{table}"').fetchall()) for table in tables]
        files = [file.read_bytes().decode("latin-1") for file in path.parent.glob(path.name + "*")]
        return "\n".join(rows + files)

    def seed_completed_turns(self, agent_id: str, session_id: str, count: int, answer_chars: int) -> None:
        """Write `count` completed turns straight into the store, an hour old: "question i" answered by
        "answer i " and `answer_chars` more characters, each with its one inference step."""
        start = datetime.now(UTC) - timedelta(hours=1)

        async def seed() -> None:
            for index in range(count):
                turn_id, at = str(uuid.uuid4()), start + timedelta(seconds=index)
                question = [UserMessage(content=f"question {index}")]
                await self.store.turns.begin_turn(agent_id, session_id, turn_id, question, at)
                answer = CompletionMessage(content=f"answer {index} " + "x" * answer_chars)
                step = InferenceStep(
                    turn_id=turn_id, step_id=str(uuid.uuid4()), started_at=at, completed_at=at, model_response=answer
                )
                await self.store.turns.save_turn_progress(
                    turn_id, new_steps=[(0, step)], status=TurnStatus.COMPLETED, output_message=answer, completed_at=at
                )

        self.background.run(seed(), timeout=300)

    def reconnect_store(self) -> None:
        """Close the store connections the stack's own worker holds, as restarting its process would."""
        self.background.run(self._database.dispose())

    def close(self) -> None:
        self.api.stop()
        self.stop_worker()
        self.background.run(self._database.dispose())
        self.background.run(self.environment.shutdown())
        self.background.close()
        self.model_server.stop()


SCRIPTED_KEY_ENV = "DA_TEST_SCRIPTED_KEY"
