"""The code sandbox's tests run real bwrap sandboxes, real processes and the real limits of this host.

The sandbox's Python environment comes from `make sandbox-env`, which `make test` starts in the background;
the `sandbox` fixture runs it too, so it waits on the build's lock and builds it when nothing else has."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from code_sandbox.availability import DEFAULT_PYTHON_ENV, find_sandbox
from code_sandbox.bubblewrap import Sandbox
from code_sandbox.limits import MB, SandboxLimits
from code_sandbox.workspaces import create_workspace

ROOT = Path(__file__).resolve().parents[2]

SMALL = SandboxLimits(
    cpu_seconds=2,
    wall_seconds=10,
    memory_bytes=256 * MB,
    workspace_bytes=8 * MB,
    file_size_bytes=4 * MB,
    max_processes=32,
    output_bytes=4096,
)
"""Limits small enough that each test passes one quickly."""


@pytest.fixture(scope="session")
def sandbox() -> Sandbox:
    subprocess.run(["make", "--no-print-directory", "sandbox-env"], cwd=ROOT, check=True, timeout=900)
    return find_sandbox(DEFAULT_PYTHON_ENV)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A data directory holding a file of its own, which no sandbox may see."""
    (tmp_path / "store.db").write_text("the store")
    return tmp_path


@pytest.fixture
def workspace(data_dir: Path) -> Path:
    return create_workspace(data_dir, "cntr_a")
