from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from llama_stack_client import LlamaStackClient

from tests.support import client_venvs, mcp_server
from tests.support.processes import ProcessStack
from tests.support.scripted_model import ThreadedServer
from tests.support.stack import Stack

PROCESSES_TIMEOUT = 600
"""pytest-timeout's bound for a test marked `processes` that sets none of its own: it starts and restarts services,
and on a loaded machine each start (a Python process's imports, a dev server) can take a minute."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("processes") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(PROCESSES_TIMEOUT))


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    running = Stack(tmp_path_factory.mktemp("stack"))
    yield running
    running.close()


@pytest.fixture(scope="module")
def processes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessStack]:
    """The service as separate processes (tests/support/processes.py) for one test module to SIGKILL and restart;
    the worker's and the API's output go to worker.log and api.log in its data directory."""
    data_dir = Path(tmp_path_factory.mktemp("processes"))
    running = ProcessStack(data_dir, log_dir=data_dir)
    yield running
    running.close()


@pytest.fixture
def model(stack: Stack):
    """The scripted model, with an empty script and no recorded requests."""
    stack.model.script()
    return stack.model


@pytest.fixture
def http(stack: Stack) -> Iterator[httpx.Client]:
    """A plain HTTP client of the API, as any non-Python caller would use."""
    with httpx.Client(base_url=stack.base_url, timeout=300) as client:
        yield client


@pytest.fixture
def llama(stack: Stack) -> LlamaStackClient:
    return LlamaStackClient(base_url=stack.base_url, max_retries=0, timeout=30)


@pytest.fixture(scope="module")
def mcp() -> Iterator[ThreadedServer]:
    """A real MCP server (tests/support/mcp_server.py) on a loopback port, for one test module."""
    server = mcp_server.start()
    yield server
    server.stop()


@pytest.fixture
def toolgroup(http: httpx.Client, mcp: ThreadedServer) -> Iterator[str]:
    """A freshly registered MCP toolgroup on `mcp`, unregistered afterwards."""
    with mcp_server.registered_toolgroup(http, mcp) as toolgroup_id:
        yield toolgroup_id


@pytest.fixture(scope="session")
def lsc_python() -> Path:
    """The interpreter of `.venv-lsc`, where the current llama-stack-client lives (tests/support/client_venvs.py);
    built here if `make test` has not; skips, saying why, when no Python >= 3.12 is found."""
    found = client_venvs.ensure()
    if isinstance(found, str):
        pytest.skip(found)
    return found
