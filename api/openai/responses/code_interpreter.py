"""The Responses `code_interpreter` tool as this dialect shows it: the tool in a request (a container of the
tenant's, or `{"type": "auto"}`: a new one made for the response with the request's files copied in), the
`code_interpreter_call` item of a call the turn ran (activities/code_calls.py), and the
`container_file_citation` annotations of the files the code wrote.

No sandbox, no execution: where this host cannot sandbox code, a request with the tool is a 400 and nothing
is made or run."""

from __future__ import annotations

import asyncio
from pathlib import PurePosixPath
from typing import Any, Literal

from fastapi import HTTPException
from pydantic import BaseModel, ConfigDict, Field

from api.containers import Containers
from api.openai.errors import OpenAIError, invalid
from api.openai.platform.container_routes import check_sandbox_options
from api.openai.responses import ids
from api.openai.responses.wire import CodeInterpreterCallItem
from code_sandbox.availability import SandboxUnavailable, configured_sandbox
from domain.content import ToolCall, ToolResponse
from workflows.contracts import CodeToolConfig


class AutoContainer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["auto"]
    file_ids: list[str] = Field(default_factory=list, max_length=100)
    memory_limit: str | None = None
    network_policy: dict[str, Any] | None = None


class CodeInterpreterTool(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["code_interpreter"]
    container: str | AutoContainer


async def require_sandbox(containers: Containers, param: str) -> None:
    """A 400 naming what to install where this host cannot sandbox code: nothing is run unsandboxed."""
    try:
        await asyncio.to_thread(configured_sandbox, containers.settings)
    except SandboxUnavailable as unavailable:
        raise invalid(f"{param} cannot be used here: {unavailable}.", "tools", "sandbox_unavailable") from None


async def bind_container(tool: CodeInterpreterTool, tenant: str, containers: Containers, index: int) -> CodeToolConfig:
    """The tool's container: the tenant's named one (404 otherwise), or a new one for `auto`."""
    param = f"tools[{index}]"
    await require_sandbox(containers, param)
    if isinstance(tool.container, str):
        container = await containers.owned(tenant, tool.container)
    else:
        auto = tool.container
        check_sandbox_options(
            auto.memory_limit, auto.network_policy, None, containers.settings.sandbox_memory_mb, f"{param}.container."
        )
        try:
            container = await containers.create(tenant, "code_interpreter", auto.file_ids, auto.memory_limit, None)
        except HTTPException as refused:
            raise OpenAIError(refused.status_code, f"{param}.container: {refused.detail}", "tools") from None
    return CodeToolConfig(kind="code_interpreter", container_id=container.container_id)


def code_interpreter_call_item(
    turn_id: str, step_id: str, call: ToolCall, response: ToolResponse
) -> CodeInterpreterCallItem | None:
    """The code_interpreter_call item of a server step's call; None for any other call."""
    record = (response.metadata or {}).get("code_interpreter")
    if not isinstance(record, dict):
        return None
    return CodeInterpreterCallItem(
        id=ids.code_interpreter_call_id(turn_id, step_id, call.call_id),
        container_id=str(record.get("container_id", "")),
        code=str(record.get("code", "")),
        outputs=list(record.get("outputs") or []),
        status="failed" if record.get("status") == "failed" else "completed",
    )


def written_files(response: ToolResponse) -> list[dict[str, str]]:
    """The container files a code call wrote (recorded by the activity)."""
    found = (response.metadata or {}).get("container_files")
    return [file for file in found if isinstance(file, dict)] if isinstance(found, list) else []


def file_citations(text: str, files: list[dict[str, str]]) -> list[dict[str, Any]]:
    """A `container_file_citation` for each file the code wrote: where the answer names the file, else at its end."""
    annotations = []
    for file in files:
        filename = PurePosixPath(file.get("path", "")).name
        start = text.find(filename) if filename else -1
        start, end = (start, start + len(filename)) if start >= 0 else (len(text), len(text))
        annotations.append(
            {
                "type": "container_file_citation",
                "container_id": file.get("container_id", ""),
                "file_id": file.get("file_id", ""),
                "filename": filename,
                "start_index": start,
                "end_index": end,
            }
        )
    return annotations
