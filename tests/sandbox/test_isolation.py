"""What sandboxed code can reach: its workspace, the interpreter, nothing else of the host or its network."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from code_sandbox.bubblewrap import Sandbox
from code_sandbox.runner import CommandResult, run_command
from code_sandbox.workspaces import create_workspace
from tests.sandbox.conftest import ROOT, SMALL

PROBE = """
import json, os, sys
paths = sys.argv[1:]
print(json.dumps({path: os.path.exists(path) for path in paths}))
"""


async def python(sandbox: Sandbox, workspace: Path, code: str, *args: str) -> CommandResult:
    return await run_command(sandbox, workspace, ["python", "-c", code, *args], SMALL)


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP listener of the test's own on the host's loopback."""
    server = socket.create_server(("127.0.0.1", 0))
    server.listen()
    yield server
    server.close()


async def test_a_listener_on_the_hosts_loopback_is_unreachable(
    sandbox: Sandbox, workspace: Path, listener: socket.socket
) -> None:
    port = listener.getsockname()[1]
    socket.create_connection(("127.0.0.1", port), timeout=5).close()  # reachable from the host
    code = """
import socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
    print("connected")
except OSError as exc:
    print(type(exc).__name__)
print([name for _, name in socket.if_nameindex()])
"""
    result = await python(sandbox, workspace, code, str(port))
    assert result.stdout.splitlines() == ["ConnectionRefusedError", "['lo']"], result


async def test_no_route_off_the_host(sandbox: Sandbox, workspace: Path) -> None:
    code = """
import socket
try:
    socket.create_connection(("1.1.1.1", 53), timeout=5)
    print("connected")
except OSError as exc:
    print(exc.strerror)
"""
    result = await python(sandbox, workspace, code)
    assert result.stdout.strip() == "Network is unreachable", result


@pytest.fixture
def host_files(data_dir: Path) -> list[str]:
    """Files of the host's: the checkout's, the data directory's, the home directory's."""
    Path.home().joinpath(".cache").mkdir(exist_ok=True)
    files = [str(ROOT / "pyproject.toml"), str(data_dir / "store.db"), str(Path.home() / ".cache")]
    assert all(Path(path).exists() for path in files)
    return files


async def test_host_paths_are_invisible(
    sandbox: Sandbox, data_dir: Path, workspace: Path, host_files: list[str]
) -> None:
    secrets = host_files
    result = await python(sandbox, workspace, PROBE, "/root", "/home", str(ROOT), str(data_dir), *secrets, "/usr/bin")
    seen = json.loads(result.stdout)
    assert [path for path, exists in seen.items() if exists] == ["/usr/bin"], result


async def test_usr_and_the_root_are_read_only(sandbox: Sandbox, workspace: Path) -> None:
    code = """
for path in ("/usr/lib/planted", "/planted", "/etc/planted", "/workspace/written"):
    try:
        open(path, "w").close()
        print(path, "written")
    except OSError as exc:
        print(path, exc.strerror)
"""
    result = await python(sandbox, workspace, code)
    assert result.stdout.splitlines() == [
        "/usr/lib/planted Read-only file system",
        "/planted Read-only file system",
        "/etc/planted Read-only file system",
        "/workspace/written written",
    ], result
    assert (workspace / "written").exists()


async def test_runs_as_an_unprivileged_user_with_no_capabilities(sandbox: Sandbox, workspace: Path) -> None:
    result = await run_command(sandbox, workspace, ["/bin/sh", "-c", "id -u; grep CapEff /proc/self/status"], SMALL)
    assert result.stdout.split() == ["1000", "CapEff:", "0000000000000000"], result


async def test_one_container_cannot_see_anothers_workspace(sandbox: Sandbox, data_dir: Path, workspace: Path) -> None:
    other = create_workspace(data_dir, "cntr_b")
    (other / "private.txt").write_text("b's")
    (workspace / "mine.txt").write_text("a's")
    code = "import os, sys; print(sorted(os.listdir('/workspace')), os.path.exists(sys.argv[1]))"
    result = await python(sandbox, workspace, code, str(other / "private.txt"))
    assert result.stdout.strip() == "['mine.txt'] False", result


async def test_only_the_sandboxs_own_processes_are_visible(sandbox: Sandbox, workspace: Path) -> None:
    code = "import os; print(len([p for p in os.listdir('/proc') if p.isdigit()]), os.getpid())"
    result = await python(sandbox, workspace, code)
    count, pid = result.stdout.split()
    assert int(count) <= 3 and int(pid) <= 3, result  # bwrap's init, the python, maybe nothing else
