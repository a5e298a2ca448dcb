"""The Responses `shell` tool run in a sandboxed container (`environment` `container_auto`: a new container for
the response with the request's files; `container_reference`: one of the tenant's): the `shell_call` and
`shell_call_output` items of a call the turn ran (activities/code_calls.py runs its commands one by one).

`environment: local` (or none) is the caller's: the model's call pauses the turn with a `shell_call` item, as a
function call does, until the caller sends its `shell_call_output` (request.py reads it as the `shell`
function's output)."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import HTTPException
from pydantic import BaseModel, ConfigDict, Field

from api.containers import Containers
from api.openai.errors import OpenAIError, invalid
from api.openai.platform.container_routes import check_sandbox_options
from api.openai.responses import ids
from api.openai.responses.code_interpreter import require_sandbox
from api.openai.responses.wire import ShellCallItem, ShellCallOutputItem
from domain.content import ToolCall, ToolResponse


class ContainerAuto(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["container_auto"]
    file_ids: list[str] = Field(default_factory=list, max_length=100)
    memory_limit: str | None = None
    network_policy: dict[str, Any] | None = None
    skills: list[Any] | None = None


class ContainerReference(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["container_reference"]
    container_id: str


class LocalEnvironment(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["local"]
    skills: list[Any] | None = None


class OtherEnvironment(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str


class ShellTool(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["shell"]
    environment: ContainerAuto | ContainerReference | LocalEnvironment | OtherEnvironment | None = None

    @property
    def local(self) -> bool:
        return self.environment is None or isinstance(self.environment, LocalEnvironment)

    allowed_callers: list[str] | None = None


async def bind_shell_container(tool: ShellTool, tenant: str, containers: Containers, index: int) -> None:
    """The shell's container: the tenant's referenced one (404 otherwise), or a new one for `container_auto`;
    after this the tool's environment references it. A local shell has none."""
    param = f"tools[{index}]"
    environment = tool.environment
    if tool.local:
        if isinstance(environment, LocalEnvironment) and environment.skills:
            raise invalid(f"{param}.environment.skills: skills are not supported by this server.", "tools")
        return
    if not isinstance(environment, ContainerAuto | ContainerReference):
        kind = environment.type if environment is not None else "local"
        raise invalid(
            f"{param}.environment {kind!r} is not supported; use 'container_auto', 'container_reference' or 'local'.",
            "tools",
        )
    await require_sandbox(containers, param)
    if isinstance(environment, ContainerReference):
        container = await containers.owned(tenant, environment.container_id)
    else:
        check_sandbox_options(
            environment.memory_limit,
            environment.network_policy,
            environment.skills,
            containers.settings.sandbox_memory_mb,
            f"{param}.environment.",
        )
        try:
            container = await containers.create(tenant, "shell", environment.file_ids, environment.memory_limit, None)
        except HTTPException as refused:
            raise OpenAIError(refused.status_code, f"{param}.environment: {refused.detail}", "tools") from None
    tool.environment = ContainerReference(type="container_reference", container_id=container.container_id)


SHELL_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"commands": {"type": "array", "items": {"type": "string"}}},
    "required": ["commands"],
}
"""The `shell` function a chat-completions model is offered for a local shell (the caller runs it)."""


def local_shell_call_item(turn_id: str, call: ToolCall) -> ShellCallItem:
    """The `shell_call` item of a call the caller is to run: the turn waits for its shell_call_output."""
    arguments = call.arguments if isinstance(call.arguments, dict) else {}
    commands = arguments.get("commands")
    return ShellCallItem(
        id=ids.shell_call_id(turn_id, "local", call.call_id),
        call_id=call.call_id,
        action={"commands": [str(command) for command in commands] if isinstance(commands, list) else []},
        environment={"type": "local"},
    )


def shell_items(
    turn_id: str, step_id: str, call: ToolCall, response: ToolResponse
) -> tuple[ShellCallItem, ShellCallOutputItem] | None:
    """The shell_call and shell_call_output items of a server step's call; None for any other call."""
    record = (response.metadata or {}).get("shell")
    if not isinstance(record, dict):
        return None
    arguments = call.arguments if isinstance(call.arguments, dict) else {}
    commands = arguments.get("commands")
    environment = {"type": "container_reference", "container_id": str(record.get("container_id", ""))}
    shell_call = ShellCallItem(
        id=ids.shell_call_id(turn_id, step_id, call.call_id),
        call_id=call.call_id,
        action={"commands": [str(command) for command in commands] if isinstance(commands, list) else []},
        environment=environment,
    )
    output = list(record.get("output") or [])
    if record.get("error"):
        output.append({"stdout": "", "stderr": str(record["error"]), "outcome": {"type": "exit", "exit_code": 1}})
    shell_output = ShellCallOutputItem(
        id=ids.shell_call_output_id(turn_id, step_id, call.call_id), call_id=call.call_id, output=output
    )
    return shell_call, shell_output
