"""Running the sandboxed code tools' calls (workflows/code_tools.py): a `code_interpreter` cell in the
container's persistent kernel, a `shell` call's commands one after another, each in the container's
bubblewrap sandbox (code_sandbox/). Nothing runs where no sandbox can be had.

Each call is recorded in the store before it runs (`started`, with which kernel it ran in) and after (its
answer), so that one cut by a crash is answered as interrupted and never run again, and a finished one is
answered as it was (docs/code-sandbox.md).

A container's kernels live in the worker process that ran its calls; its workspace is on that worker's
host. `code_host` claims a container for the host of the worker that first asks (the turn then sends the
container's calls to that host's task queue); a call reaching a worker of another host all the same (a turn
of an earlier release, which sends every call to the shared queue) is refused saying which host holds the
container, rather than run on an empty workspace.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.heartbeat import heartbeating
from activities.pending_writes import write_pending
from activities.tools import tool_run_started
from code_sandbox.availability import SandboxUnavailable, configured_sandbox
from code_sandbox.bubblewrap import Sandbox
from code_sandbox.kernel import CellResult, PythonKernel
from code_sandbox.limits import MB, Limit, SandboxLimits, describe
from code_sandbox.runner import CommandResult, run_command
from code_sandbox.workspaces import WorkspaceFile, workspace_path
from configuration.settings import Settings
from domain.content import ToolResponse
from store.containers.containers import Container, ContainerFile, ContainerLimitReached
from store.repository import Store
from workflows.code_tools import (
    CODE_CALL_OUTCOME_ACTIVITY,
    CODE_HOST_ACTIVITY,
    CODE_INTERPRETER,
    CODE_UNAVAILABLE,
    RUN_CODE_ACTIVITY,
    SESSION_CONTAINER,
    CodeCallOutcomeRequest,
    CodeHost,
    call_key,
    code_error,
    code_tool_config,
    host_task_queue,
    session_container_id,
)
from workflows.contracts import CodeToolConfig, ToolRunRequest

MEMORY_MB = {"1g": 1024, "4g": 4096, "16g": 16384, "64g": 65536}


def file_url(container_id: str, file_id: str) -> str:
    """Where a container file's bytes are served (the Containers API), as an image output names it."""
    return f"/v1/containers/{container_id}/files/{file_id}/content"


def worker_host(settings: Settings) -> str:
    """The id of this worker's host (DA_WORKER_HOST), by default the machine's host name."""
    return settings.worker_host or socket.gethostname()


class CodeActivities:
    def __init__(self, store: Store, settings: Settings) -> None:
        self._store = store
        self._settings = settings
        self._limits = SandboxLimits.from_settings(settings)
        self.host = worker_host(settings)
        # Where the calls of the containers this host holds are sent: the worker polls it.
        self.task_queue = host_task_queue(settings.task_queue, self.host)
        self._kernels: dict[str, PythonKernel] = {}
        self._identity = f"{self.host}:{os.getpid()}:{id(self)}"

    @activity.defn(name=CODE_HOST_ACTIVITY)
    async def code_host(self, request: ToolRunRequest) -> CodeHost:
        """The host whose workers run the call: the container's, claimed for this worker's host at its first
        call. Writes the turn's pending writes, which the call carries no more (a call to a host that is gone
        never runs)."""
        config = code_tool_config(request.tool)
        assert config is not None
        await write_pending(self._store, request.turn_id, request.pending, *tool_run_started(request))
        container = await self._live_container(request, config)
        if container.host is None:
            async with heartbeating():
                await self._sandbox()  # a host that cannot run code never holds a container
        host = await self._store.containers.claim_host(container.container_id, self.host)
        if host is None:
            raise _gone(container.container_id)
        return CodeHost(
            container_id=container.container_id,
            host=host,
            task_queue=host_task_queue(self._settings.task_queue, host),
            start_timeout_seconds=self._settings.code_host_start_timeout,
        )

    @activity.defn(name=RUN_CODE_ACTIVITY)
    async def run_code_call(self, request: ToolRunRequest) -> ToolResponse:
        config = code_tool_config(request.tool)
        assert config is not None
        await write_pending(self._store, request.turn_id, request.pending, *tool_run_started(request))
        container = await self._container(request, config)
        sandbox = await self._sandbox()
        key = call_key(request)
        kernel = self._kernels.get(container.container_id)
        note = {"runner": self._identity, "kernel_starts": kernel.starts if kernel else 0}
        earlier = await self._store.containers.start_call(key, container.container_id, datetime.now(UTC), note)
        if earlier is not None:  # this very call was begun before: never run it again
            return self._outcome(request, earlier.status, earlier.result, "it was begun before")
        await self._store.containers.touch(container.container_id, datetime.now(UTC), self.host)
        async with heartbeating():
            if config.kind == CODE_INTERPRETER:
                response = await self._run_cell(request, container, sandbox)
            else:
                response = await self._run_shell(request, container, sandbox)
        await self._store.containers.finish_call(key, response.model_dump(mode="json"))
        return response

    @activity.defn(name=CODE_CALL_OUTCOME_ACTIVITY)
    async def code_call_outcome(self, request: CodeCallOutcomeRequest) -> ToolResponse:
        """The answer of a call whose one attempt was cut: what the store recorded of it."""
        record = await self._store.containers.call(call_key(request.run))
        if record is None:
            return code_error(request.run, f"Error: the call did not run ({request.failure}). Nothing was executed.")
        return self._outcome(request.run, record.status, record.result, request.failure)

    def _outcome(self, request: ToolRunRequest, status: str, recorded: dict[str, Any] | None, why: str) -> ToolResponse:
        if status == "finished" and recorded is not None:
            return ToolResponse.model_validate(recorded)
        note = recorded or {}
        config = code_tool_config(request.tool)
        kernel = self._kernels.get(config.container_id) if config else None
        survived = (
            note.get("runner") == self._identity
            and kernel is not None
            and kernel.starts <= max(int(note.get("kernel_starts", 0)), 1)
        )
        state = (
            "The kernel was not restarted: variables from earlier calls are kept."
            if survived
            else "The kernel restarted: variables and imports from earlier calls are gone."
        )
        if config is not None and config.kind != CODE_INTERPRETER:
            state = ""
        return code_error(
            request,
            f"Error: this call was interrupted before it finished ({why}). It was not run again, since code can "
            f"have side effects: it may have run in part. {state} Files in /workspace are kept.".replace("  ", " "),
            extra={"interrupted": True},
        )

    async def _live_container(self, request: ToolRunRequest, config: CodeToolConfig) -> Container:
        tenant = await self._store.turns.turn_tenant(request.turn_id)
        if tenant is not None and config.container_id == SESSION_CONTAINER and request.session_id is not None:
            return await self._session_container(tenant, request.session_id)
        container = await self._store.containers.get(tenant, config.container_id, datetime.now(UTC)) if tenant else None
        if container is None:
            raise _gone(config.container_id)
        return container

    async def _container(self, request: ToolRunRequest, config: CodeToolConfig) -> Container:
        """The container, when this worker's host holds it (or none does yet)."""
        container = await self._live_container(request, config)
        if container.host is not None and container.host != self.host:
            raise ApplicationError(
                f"container {container.container_id} is held by host {container.host!r}, whose workers must run "
                f"its calls; this worker is on {self.host!r}. Nothing was run.",
                type=CODE_UNAVAILABLE,
                non_retryable=True,
            )
        return container

    async def _session_container(self, tenant: str, session_id: str) -> Container:
        """The container of a llama-stack session's code interpreter, made at its first call."""
        container_id = session_container_id(session_id)
        now = datetime.now(UTC)
        found = await self._store.containers.get(tenant, container_id, now)
        if found is not None:
            return found
        made = Container(
            container_id,
            tenant,
            f"session {session_id}",
            "1g",
            {"type": "disabled"},
            self._settings.container_idle_minutes,
            None,
            now,
            now,
        )
        try:
            await self._store.containers.create(made, self._settings.max_containers_per_tenant, now)
        except ContainerLimitReached:
            raise ApplicationError(
                f"the tenant holds {self._settings.max_containers_per_tenant} containers, as many as it may "
                "(DA_MAX_CONTAINERS_PER_TENANT); nothing was run",
                type=CODE_UNAVAILABLE,
                non_retryable=True,
            ) from None
        return made

    async def _sandbox(self) -> Sandbox:
        try:
            return await asyncio.to_thread(configured_sandbox, self._settings)
        except SandboxUnavailable as unavailable:
            raise ApplicationError(str(unavailable), type=CODE_UNAVAILABLE, non_retryable=True) from None

    def _workspace(self, container_id: str) -> Path:
        workspace = workspace_path(self._settings.data_dir, container_id)
        workspace.mkdir(parents=True, exist_ok=True)
        return workspace

    def _limits_of(self, container: Container) -> SandboxLimits:
        memory = min(MEMORY_MB.get(container.memory_limit, 1024) * MB, self._limits.memory_bytes)
        return dataclasses.replace(self._limits, memory_bytes=memory)

    async def _run_cell(self, request: ToolRunRequest, container: Container, sandbox: Sandbox) -> ToolResponse:
        code = request.call.arguments.get("code") if isinstance(request.call.arguments, dict) else None
        if not isinstance(code, str):
            return code_error(request, 'Error: code_interpreter needs {"code": "<Python code>"}.', code="")
        kernel = self._kernels.get(container.container_id)
        if kernel is None:
            workspace = self._workspace(container.container_id)
            kernel = self._kernels[container.container_id] = PythonKernel(
                sandbox, workspace, self._limits_of(container)
            )
        result = await kernel.execute(code)
        files = await self._record_files(container, result.files)
        return _cell_response(request, container, code, result, files, self._limits_of(container))

    async def _run_shell(self, request: ToolRunRequest, container: Container, sandbox: Sandbox) -> ToolResponse:
        arguments = request.call.arguments if isinstance(request.call.arguments, dict) else {}
        commands = arguments.get("commands")
        if not isinstance(commands, list) or not all(isinstance(command, str) for command in commands):
            return code_error(request, 'Error: shell needs {"commands": ["<command>", ...]}.')
        workspace = self._workspace(container.container_id)
        limits = self._limits_of(container)
        outputs: list[dict[str, Any]] = []
        written: list[WorkspaceFile] = []
        for command in commands:
            result = await run_command(sandbox, workspace, ["/bin/sh", "-c", command], limits)
            outputs.append(_shell_output(result))
            written += result.files
        files = await self._record_files(container, written)
        text = "\n".join(
            f"$ {command}\n{output['stdout']}{output['stderr']}[{_outcome_text(output)}]"
            for command, output in zip(commands, outputs, strict=True)
        )
        metadata = {
            "shell": {"container_id": container.container_id, "commands": commands, "output": outputs},
            "container_files": files,
        }
        return ToolResponse(
            call_id=request.call.call_id, tool_name=request.call.tool_name, content=text, metadata=metadata
        )

    async def _record_files(self, container: Container, files: list[WorkspaceFile]) -> list[dict[str, str]]:
        """The files the call wrote, recorded as the container's (source `assistant`)."""
        recorded = []
        for file in {file.path: file for file in files}.values():
            made = ContainerFile(
                "cfile_" + os.urandom(16).hex(),
                container.container_id,
                file.path,
                file.size,
                "assistant",
                datetime.now(UTC),
            )
            kept = await self._store.containers.put_file(container.tenant_id, made)
            recorded.append({"file_id": kept.file_id, "path": kept.path, "container_id": container.container_id})
        return recorded

    async def close(self) -> None:
        for kernel in self._kernels.values():
            await kernel.close()


def _gone(container_id: str) -> ApplicationError:
    return ApplicationError(
        f"container {container_id} is gone (deleted or expired); nothing was run",
        type=CODE_UNAVAILABLE,
        non_retryable=True,
    )


def _cell_response(
    request: ToolRunRequest,
    container: Container,
    code: str,
    result: CellResult,
    files: list[dict[str, str]],
    limits: SandboxLimits,
) -> ToolResponse:
    parts = []
    if result.stdout:
        parts.append(result.stdout)
    if result.stderr:
        parts.append(f"[stderr]\n{result.stderr}")
    if result.result is not None:
        parts.append(result.result)
    if result.error is not None:
        parts.append(result.error.traceback or f"{result.error.name}: {result.error.value}")
    if result.limit is not None:
        parts.append(f"[stopped: {describe(result.limit, limits)}]")
    if result.kernel_restarted:
        parts.append("[the kernel was restarted: variables and imports from earlier calls are gone]")
    by_path = {file["path"]: file for file in files}
    if files:
        parts.append("[files written: " + ", ".join(file["path"] for file in files) + "]")
    logs = "\n".join(parts)
    outputs: list[dict[str, Any]] = [{"type": "logs", "logs": logs}] if logs else []
    outputs += [
        {"type": "image", "url": file_url(container.container_id, by_path[path]["file_id"])}
        for path in result.images
        if path in by_path
    ]
    failed = result.error is not None or result.limit is not None
    metadata: dict[str, Any] = {
        "code_interpreter": {
            "container_id": container.container_id,
            "code": code,
            "outputs": outputs,
            "status": "failed" if failed else "completed",
        },
        "container_files": files,
    }
    if failed:
        metadata["is_error"] = True
    return ToolResponse(
        call_id=request.call.call_id, tool_name=request.call.tool_name, content=logs or "(no output)", metadata=metadata
    )


def _shell_output(result: CommandResult) -> dict[str, Any]:
    timed_out = result.limit in (Limit.WALL, Limit.CPU)
    outcome = {"type": "timeout"} if timed_out else {"type": "exit", "exit_code": result.exit_code}
    return {"stdout": result.stdout, "stderr": result.stderr, "outcome": outcome}


def _outcome_text(output: dict[str, Any]) -> str:
    outcome = output["outcome"]
    return "timed out" if outcome["type"] == "timeout" else f"exit code {outcome['exit_code']}"
