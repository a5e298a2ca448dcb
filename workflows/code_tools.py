"""The sandboxed code tools a turn offers its model — `code_interpreter` (a cell in the container's persistent
Python kernel) and `shell` (commands in the container) — and the contracts of the activities that run them
(activities/code_calls.py).

Durable execution: code has side effects, so a call is never run twice. Its activity has one attempt and
writes a `started` mark in the store before the code runs and the result after (store/containers/). A call
cut by a crash (the worker killed, its heartbeats stop) fails that one attempt; the turn then asks
`code_call_outcome` what the store knows: a recorded result is answered as it was, and a call that only
started is answered with an error telling the model it was interrupted, not run again, and whether the
kernel (its variables) survived. The turn goes on either way.

Routing: a container's workspace and kernel live on one worker host, so its calls run there. Before a call
the turn asks `code_host` which host holds the container (the first asker's host claims it), then sends the
call to that host's own task queue (`host_task_queue`) with a schedule-to-start timeout: a host that is gone
is answered as such instead of waited for.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import BaseModel

from domain.content import ToolResponse
from domain.tools import BUILTIN_PROVIDER
from workflows.contracts import CodeToolConfig, ServerTool, ToolRunRequest

CODE_INTERPRETER = "code_interpreter"
CODE_INTERPRETER_TOOLGROUP = "builtin::code_interpreter"
"""llama-stack's built-in toolgroup: its one tool runs in a container of the turn's session."""
SESSION_CONTAINER = "session"
"""The container id a tool of CODE_INTERPRETER_TOOLGROUP carries: the turn's session's container, made at
its first call (`session_container_id`) and gone when idle past DA_CONTAINER_IDLE_MINUTES."""
SHELL = "shell"
RUN_CODE_ACTIVITY = "run_code_call"
CODE_CALL_OUTCOME_ACTIVITY = "code_call_outcome"
CODE_HOST_ACTIVITY = "code_host"
CODE_CALL_TIMEOUT = timedelta(minutes=15)
"""Beyond any sandbox wall limit: the sandbox's own watchdog ends a call first, with a result."""
CODE_UNAVAILABLE = "CodeUnavailable"
"""ApplicationError type: the call could not be run at all (no sandbox, the container gone); nothing ran."""

_CODE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"code": {"type": "string", "description": "Python code to run in the container's kernel."}},
    "required": ["code"],
}
_SHELL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "commands": {"type": "array", "items": {"type": "string"}, "description": "Shell commands, run in order."}
    },
    "required": ["commands"],
}
_DESCRIPTIONS = {
    CODE_INTERPRETER: (
        "Run Python code in a persistent kernel (variables stay between calls) with numpy, pandas and "
        "matplotlib; files live in /workspace, figures left open are saved as PNGs. No network."
    ),
    SHELL: "Run shell commands in the container (files in /workspace). No network.",
}


def code_tool(config: CodeToolConfig, toolgroup_id: str | None = None) -> ServerTool:
    """The tool as the model is offered it: a function taking `{"code": ...}` or `{"commands": [...]}`. The
    container rides in `args`, which the activity reads (the model's arguments never choose it)."""
    return ServerTool(
        toolgroup_id=toolgroup_id or config.kind,
        provider_id=BUILTIN_PROVIDER,
        name=config.kind,
        description=_DESCRIPTIONS[config.kind],
        input_schema=_CODE_SCHEMA if config.kind == CODE_INTERPRETER else _SHELL_SCHEMA,
        args={"code_tool": config.model_dump(mode="json")},
    )


def code_tool_config(tool: ServerTool) -> CodeToolConfig | None:
    """The container and kind of a code tool; None for any other tool."""
    found = tool.args.get("code_tool") if tool.provider_id == BUILTIN_PROVIDER else None
    return CodeToolConfig.model_validate(found) if isinstance(found, dict) else None


def code_error(
    request: ToolRunRequest, text: str, code: str | None = None, extra: dict[str, Any] | None = None
) -> ToolResponse:
    """A call answered with an error in the tool's place: the model reads `text`, and a Responses client sees the
    `code_interpreter_call` (its `code`, by default the call's) or `shell_call` failed with it."""
    config = code_tool_config(request.tool)
    metadata: dict[str, Any] = {"is_error": True, **(extra or {})}
    if config is not None and config.kind == CODE_INTERPRETER:
        arguments = request.call.arguments if isinstance(request.call.arguments, dict) else {}
        metadata["code_interpreter"] = {
            "container_id": config.container_id,
            "code": code if code is not None else str(arguments.get("code", "")),
            "outputs": [{"type": "logs", "logs": text}],
            "status": "failed",
        }
    elif config is not None:
        metadata["shell"] = {"container_id": config.container_id, "commands": [], "output": [], "error": text}
    return ToolResponse(call_id=request.call.call_id, tool_name=request.call.tool_name, content=text, metadata=metadata)


class CodeCallOutcomeRequest(BaseModel):
    run: ToolRunRequest
    failure: str
    """Why the call's one attempt failed, as the turn saw it."""


class CodeHost(BaseModel):
    """Where a container's calls run: the host holding its workspace and kernel, and that host's task queue."""

    container_id: str
    host: str
    task_queue: str
    start_timeout_seconds: float
    """How long a call waits for a worker of the host to take it (DA_CODE_HOST_START_TIMEOUT)."""


def host_task_queue(task_queue: str, host: str) -> str:
    """The task queue that the workers of one host poll besides the shared one, for their containers' calls."""
    return f"{task_queue}-host-{host}"


def session_container_id(session_id: str) -> str:
    return f"cntr_session_{session_id}"


SESSION_CODE_INTERPRETER = code_tool(
    CodeToolConfig(kind="code_interpreter", container_id=SESSION_CONTAINER), CODE_INTERPRETER_TOOLGROUP
)


def call_key(request: ToolRunRequest) -> str:
    """The call's record in the store: one per step of the turn that runs it."""
    return f"{request.turn_id}:{request.step_id}"
