"""A persistent Python kernel per container: cells run one after another in one namespace (variables,
imports and open files stay between calls), in the container's sandbox, as in a Jupyter notebook.

The kernel is a long-lived sandboxed process running kernel_helper.py; requests and replies are JSON
lines on two pipes of their own, stdout and stderr are the process's real ones. A cell that passes a
limit, or code that kills the kernel (`os._exit`, the memory limit), ends with the kernel restarted and
says so: its state is gone, as the model must know. What the code leaves running between calls is held
to the same CPU and workspace limits; a kernel stopped then reports it at the next call.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from code_sandbox.bubblewrap import SANDBOX_PYTHON, Sandbox
from code_sandbox.capture import CappedOutput, MarkedStream
from code_sandbox.limits import Limit, SandboxLimits, describe
from code_sandbox.process import SandboxProcess
from code_sandbox.watchdog import Watchdog, limit_seen_after
from code_sandbox.workspaces import WorkspaceFile, WorkspaceScan, scan_workspace

HELPER = Path(__file__).with_name("kernel_helper.py")
HELPER_INSIDE = "/opt/sandbox-kernel/kernel_helper.py"
REPLY_BYTES = 4 * 1024 * 1024
"""The longest reply line read from the kernel (its result and traceback are cut to the output limit first)."""
OUTPUT_SETTLE_SECONDS = 2.0
"""How long a finished cell's output may take to drain from the pipes (it is normally there already)."""


@dataclass(frozen=True)
class CellError:
    name: str
    """The exception's type, e.g. `ZeroDivisionError`; `KernelDied` or `LimitExceeded` for the kernel's end."""
    value: str
    traceback: str


@dataclass(frozen=True)
class CellResult:
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    result: str | None
    """The repr of the cell's last expression, as a notebook shows it; None for a statement or None."""
    error: CellError | None
    images: list[str]
    """PNG files (paths inside the sandbox) of the matplotlib figures the cell left open."""
    files: list[WorkspaceFile]
    """Files in /workspace the cell created or changed, the images included."""
    limit: Limit | None
    kernel_restarted: bool
    """The kernel's state (variables, imports) was lost in or before this call; the next call starts afresh."""
    seconds: float


class KernelFailed(RuntimeError):
    """The kernel could not be started (it exited or did not say it was ready in time)."""


class PythonKernel:
    """One container's kernel. Calls are served one at a time; `close` stops it and everything it started."""

    def __init__(self, sandbox: Sandbox, workspace: Path, limits: SandboxLimits) -> None:
        self.sandbox = sandbox
        self.workspace = workspace
        self.limits = limits
        self.starts = 0
        self._lock = asyncio.Lock()
        self._process: SandboxProcess | None = None
        self._requests: Any = None
        self._replies: asyncio.StreamReader | None = None
        self._stdout: MarkedStream | None = None
        self._stderr: MarkedStream | None = None
        self._idle: asyncio.Task[Limit] | None = None
        self._lost_between_calls: str | None = None

    async def start(self) -> None:
        """Starts the kernel now rather than at the first call (a call starts it when it is not running)."""
        async with self._lock:
            if self._process is None:
                await self._start()

    async def execute(self, code: str) -> CellResult:
        async with self._lock:
            started = time.monotonic()
            lost = await self._ensure_running()
            assert self._process is not None and self._stdout is not None and self._stderr is not None
            process = self._process
            before = await asyncio.to_thread(scan_workspace, self.workspace)
            oom_kills, forks_refused = _counters(process)
            marker = f"\x1e{uuid.uuid4().hex}\x1e"
            stdout = self._stdout.begin(self.limits.output_bytes, marker.encode())
            stderr = self._stderr.begin(self.limits.output_bytes, marker.encode())
            watchdog = Watchdog(process, self.workspace, self.limits, before.disk_bytes)
            reply, fired = await self._call(code, marker, watchdog)
            if reply is not None:
                await asyncio.gather(self._stdout.end(OUTPUT_SETTLE_SECONDS), self._stderr.end(OUTPUT_SETTLE_SECONDS))
                memory = False
            else:
                memory = _counters(process)[0] > oom_kills
                await self._stop()  # the kernel died or was killed: its output ends with it
                await asyncio.gather(self._stdout.end(0), self._stderr.end(0))
            after = await asyncio.to_thread(scan_workspace, self.workspace)
            more_forks_refused = self._process is not None and _counters(self._process)[1] > forks_refused
            if self._process is not None:
                self._watch_between_calls(after)
            return self._result(
                reply, fired, memory, more_forks_refused, lost, stdout, stderr, before, after, watchdog, started
            )

    async def close(self) -> None:
        async with self._lock:
            await self._stop()

    async def _ensure_running(self) -> bool:
        """Starts the kernel when it is not running; True when the previous one was lost since the last call
        (it died, or the watchdog stopped what it ran between calls), which that call could not report."""
        lost = False
        if self._idle is not None and self._idle.done() and not self._idle.cancelled():
            self._lost_between_calls = f"{describe(self._idle.result(), self.limits)} between calls"
            lost = True
        elif self._process is not None and self._process.process.returncode is not None:
            memory = _counters(self._process)[0] > 0
            self._lost_between_calls = (
                f"{describe(Limit.MEMORY, self.limits)} between calls" if memory else "it exited between calls"
            )
            lost = True
        if lost:
            await self._stop()
        self._cancel_idle_watch()
        if self._process is None:
            await self._start()
        return lost

    async def _start(self) -> None:
        requests_read, requests_write = os.pipe()
        replies_read, replies_write = os.pipe()
        try:
            process = await SandboxProcess.start(
                self.sandbox,
                self.workspace,
                [SANDBOX_PYTHON, "-I", HELPER_INSIDE, str(requests_read), str(replies_write)],
                self.limits,
                read_only=[(HELPER, HELPER_INSIDE)],
                pass_fds=(requests_read, replies_write),
            )
        except BaseException:
            os.close(requests_write)
            os.close(replies_read)
            raise
        finally:
            os.close(requests_read)
            os.close(replies_write)
        self.starts += 1
        self._process = process
        self._requests = os.fdopen(requests_write, "wb", buffering=0)
        loop = asyncio.get_running_loop()
        self._replies = reader = asyncio.StreamReader(limit=REPLY_BYTES)
        replies = os.fdopen(replies_read, "rb", buffering=0)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), replies)
        assert process.process.stdout is not None and process.process.stderr is not None
        self._stdout = MarkedStream(process.process.stdout)
        self._stderr = MarkedStream(process.process.stderr)
        try:
            ready = await asyncio.wait_for(self._replies.readline(), self.limits.wall_seconds)
        except TimeoutError:
            ready = b""
        if _parse(ready).get("ready") is not True:
            await self._stop()
            raise KernelFailed("the Python kernel did not start in its sandbox")

    async def _call(self, code: str, marker: str, watchdog: Watchdog) -> tuple[dict[str, Any] | None, Limit | None]:
        """Sends the cell and waits for its reply or the watchdog; (None, limit or None) when the kernel is
        gone: killed by the watchdog, or dead on its own."""
        assert self._replies is not None
        request = json.dumps({"code": code, "marker": marker, "max_chars": self.limits.output_bytes}) + "\n"
        replies = self._replies

        async def send_and_read() -> bytes:
            # In a thread: a kernel that does not read (it is stuck) must not hold the worker's loop, and the
            # watchdog, already running, ends it.
            await asyncio.to_thread(self._requests.write, request.encode())
            return await replies.readline()

        watch = asyncio.ensure_future(watchdog.watch())
        replied = asyncio.ensure_future(send_and_read())
        either: list[asyncio.Future[Any]] = [replied, watch]
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if watch.done():
            replied.cancel()
            return None, watch.result()
        watch.cancel()
        try:
            reply = _parse(replied.result())
        except (OSError, ValueError):  # the kernel is gone (a broken pipe), or a line over REPLY_BYTES
            reply = {}
        return (reply if "images" in reply else None), None

    def _watch_between_calls(self, scan: WorkspaceScan) -> None:
        assert self._process is not None
        watchdog = Watchdog(self._process, self.workspace, self.limits, scan.disk_bytes, wall=False)
        self._idle = asyncio.ensure_future(watchdog.watch())

    def _cancel_idle_watch(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None

    async def _stop(self) -> None:
        self._cancel_idle_watch()
        process, self._process = self._process, None
        if process is not None:
            await process.close()
        for stream in (self._stdout, self._stderr):
            if stream is not None:
                await stream.close()
        if self._requests is not None:
            with contextlib.suppress(OSError):
                self._requests.close()
            self._requests = None

    def _result(
        self,
        reply: dict[str, Any] | None,
        fired: Limit | None,
        memory: bool,
        forks_refused: bool,
        lost: bool,
        stdout: CappedOutput,
        stderr: CappedOutput,
        before: WorkspaceScan,
        after: WorkspaceScan,
        watchdog: Watchdog,
        started: float,
    ) -> CellResult:
        error: CellError | None = None
        limit = fired or (Limit.MEMORY if memory else None)
        if reply is None:
            if limit is not None:
                error = CellError("LimitExceeded", f"the cell was stopped: {describe(limit, self.limits)}", "")
            else:
                error = CellError("KernelDied", "the Python kernel exited while running the cell", "")
        elif isinstance(raised := reply.get("error"), dict):
            error = CellError(str(raised.get("name")), str(raised.get("value")), str(raised.get("traceback")))
            if error.name == "MemoryError":
                limit = Limit.MEMORY  # the address-space limit, where no memory cgroup could be had
            elif raised.get("errno") == errno.EFBIG:
                limit = Limit.FILE_SIZE
        written = after.written_since(before)
        limit = limit or limit_seen_after(
            self.limits,
            memory=False,
            forks_refused=forks_refused,
            written=written,
            grew_past_workspace=watchdog.grew_past_workspace_limit(after.disk_bytes),
            truncated=stdout.truncated or stderr.truncated,
        )
        lost_between_calls, self._lost_between_calls = self._lost_between_calls, None
        if lost_between_calls is not None:
            stderr.kept[:0] = f"[the kernel was restarted before this call: {lost_between_calls}]\n".encode()
        result = reply.get("result") if reply is not None else None
        images = reply.get("images") if reply is not None else []
        return CellResult(
            stdout=stdout.text(),
            stderr=stderr.text(),
            stdout_truncated=stdout.truncated,
            stderr_truncated=stderr.truncated,
            result=result if isinstance(result, str) else None,
            error=error,
            images=[image for image in images if isinstance(image, str)] if isinstance(images, list) else [],
            files=written,
            limit=limit,
            kernel_restarted=lost or reply is None,
            seconds=time.monotonic() - started,
        )


def _parse(line: bytes) -> dict[str, Any]:
    try:
        message = json.loads(line)
    except ValueError:
        return {}
    return message if isinstance(message, dict) else {}


def _counters(process: SandboxProcess) -> tuple[int, int]:
    """(processes killed for memory, forks refused) in the sandbox's cgroup so far."""
    if process.cgroup is None:
        return 0, 0
    return process.cgroup.oom_kills(), process.cgroup.forks_refused()
