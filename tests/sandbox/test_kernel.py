"""The persistent Python kernel: state across calls, restarts that say so, figures as files."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from code_sandbox.bubblewrap import Sandbox
from code_sandbox.kernel import PythonKernel
from code_sandbox.limits import Limit
from tests.sandbox.conftest import SMALL

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
async def kernel(sandbox: Sandbox, workspace: Path) -> AsyncIterator[PythonKernel]:
    running = PythonKernel(sandbox, workspace, dataclasses.replace(SMALL, wall_seconds=20))
    yield running
    await running.close()


async def test_state_is_kept_across_calls(kernel: PythonKernel) -> None:
    first = await kernel.execute("import math\ntotal = 40\nprint('set')")
    second = await kernel.execute("total += 2\ntotal")
    assert (first.stdout, first.result, first.error) == ("set\n", None, None), first
    assert (second.result, second.kernel_restarted, kernel.starts) == ("42", False, 1), second


async def test_an_exception_keeps_the_kernel(kernel: PythonKernel) -> None:
    await kernel.execute("kept = 'yes'")
    failed = await kernel.execute("def f():\n    return 1 / 0\nf()")
    after = await kernel.execute("kept")
    assert failed.error is not None and failed.error.name == "ZeroDivisionError"
    assert 'File "<cell 2>", line 2, in f' in failed.error.traceback and "kernel_helper" not in failed.error.traceback
    assert (after.result, after.kernel_restarted) == ("'yes'", False)


async def test_output_of_the_cell_and_of_its_subprocesses(kernel: PythonKernel) -> None:
    result = await kernel.execute(
        "import subprocess, sys\nprint('a')\nsubprocess.run(['echo', 'b'])\nprint('c', file=sys.stderr)"
    )
    assert (result.stdout, result.stderr) == ("a\nb\n", "c\n"), result


async def test_the_kernel_restarts_after_exiting_and_says_so(kernel: PythonKernel) -> None:
    await kernel.execute("state = 1")
    died = await kernel.execute("import os\nos._exit(3)")
    after = await kernel.execute("'state' in globals()")
    assert died.kernel_restarted and died.error is not None and died.error.name == "KernelDied", died
    assert (after.result, after.kernel_restarted, kernel.starts) == ("False", False, 2), after


async def test_the_kernel_restarts_after_a_memory_blow_up(sandbox: Sandbox, kernel: PythonKernel) -> None:
    await kernel.execute("state = 1")
    blown = await kernel.execute("hog = bytearray(400 << 20)")
    after = await kernel.execute("print('alive')")
    assert blown.limit is Limit.MEMORY, blown
    if sandbox.cgroups.memory is not None:  # killed by the cgroup; with the rlimit, a MemoryError keeps the kernel
        assert blown.kernel_restarted and "memory" in blown.error.value, blown
    assert after.stdout == "alive\n" and after.error is None


async def test_a_cell_past_its_wall_time_restarts_the_kernel(sandbox: Sandbox, workspace: Path) -> None:
    kernel = PythonKernel(sandbox, workspace, dataclasses.replace(SMALL, wall_seconds=1))
    try:
        stopped = await kernel.execute("import time\nprint('before')\ntime.sleep(30)")
        after = await kernel.execute("print('after')")
    finally:
        await kernel.close()
    assert (stopped.limit, stopped.kernel_restarted, stopped.stdout) == (Limit.WALL, True, "before\n"), stopped
    assert after.stdout == "after\n"


async def test_code_left_running_between_calls_is_stopped_at_the_cpu_limit(sandbox: Sandbox, workspace: Path) -> None:
    kernel = PythonKernel(sandbox, workspace, dataclasses.replace(SMALL, cpu_seconds=1))
    try:
        spin = "import threading\ndef spin():\n    while True:\n        pass\nthreading.Thread(target=spin).start()"
        started = await kernel.execute(spin)
        assert started.limit is None and not started.kernel_restarted, started
        for _ in range(60):  # the idle watchdog looks once a second
            if kernel._process is None or kernel._process.process.returncode is not None:
                break
            await asyncio.sleep(0.2)
        after = await kernel.execute("print('fresh')")
    finally:
        await kernel.close()
    assert after.kernel_restarted and after.stdout == "fresh\n", after
    assert "used more than 1 s of CPU time between calls" in after.stderr


async def test_matplotlib_writes_a_png_into_the_workspace(kernel: PythonKernel, workspace: Path) -> None:
    result = await kernel.execute(
        "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [2, 4, 1])\nplt.title('sales')\nNone"
    )
    assert result.error is None and len(result.images) == 1, result
    inside = result.images[0]
    assert inside.startswith("/workspace/figures/") and [file.path for file in result.files] == [inside]
    assert (workspace / inside.removeprefix("/workspace/")).read_bytes().startswith(PNG_SIGNATURE)


async def test_files_the_code_wrote_are_listed(kernel: PythonKernel) -> None:
    await kernel.execute("open('kept.txt', 'w').write('1')")
    result = await kernel.execute("import pandas as pd\npd.DataFrame({'a': [1, 2]}).to_csv('out.csv')")
    assert [file.path for file in result.files] == ["/workspace/out.csv"], result
