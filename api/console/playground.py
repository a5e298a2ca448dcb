"""The console's playground (`/console/playground`): chat with a configured model through the Responses API,
watch its reply and tool calls stream in, attach one of the tenant's vector stores for `file_search` and a remote
MCP server, define one client function tool and answer its calls inline.

The API does not take the console's cookie (it is scoped to /console and the API wants a header), so the page's
script posts to `POST /console/playground/responses`, which checks the CSRF token (a header here, since the
script sends JSON) and sends the one Responses request the playground makes, `stream: true`, through the whole
application with the visitor's key (in_process.py), streaming its events back unchanged. The page
(static/playground.js) renders every model-supplied string with textContent only.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from starlette.responses import Response

from api.console import guard as guard
from api.console.in_process import credentials, get_json, post_streamed
from api.console.routes import page
from api.services import ServicesDep

router = APIRouter(prefix="/console/playground", include_in_schema=False)

CSRF_HEADER = "x-csrf-token"
"""The script sends the page's CSRF token in this header (a page elsewhere cannot set it without CORS)."""
STORES_SHOWN = 100
"""The tenant's newest vector stores offered to attach (the API's largest page)."""


class ClientTool(BaseModel):
    """The one function tool the visitor defines; its calls pause the response until answered on the page."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: str = Field(default="", max_length=1024)
    parameters: dict[str, Any] = Field(description="A JSON schema of the arguments")


class McpServer(BaseModel):
    """A remote MCP server whose tools the model may call; the playground shows each call, unapproved."""

    model_config = ConfigDict(extra="forbid")
    server_label: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    server_url: str = Field(min_length=1, max_length=2000)


class ToolOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    call_id: str = Field(min_length=1, max_length=200)
    output: str = Field(max_length=100_000)


class PlaygroundTurn(BaseModel):
    """What the page sends for one turn: a message, or the outputs of the calls the last response made."""

    model_config = ConfigDict(extra="forbid")
    model: str = Field(min_length=1, max_length=200)
    input: str | None = Field(default=None, min_length=1, max_length=100_000)
    tool_outputs: list[ToolOutput] = Field(default_factory=list, max_length=32)
    previous_response_id: str | None = Field(default=None, max_length=200)
    instructions: str | None = Field(default=None, max_length=20_000)
    vector_store_id: str | None = Field(default=None, max_length=200)
    client_tool: ClientTool | None = None
    mcp_server: McpServer | None = None

    @model_validator(mode="after")
    def _one_kind_of_input(self) -> PlaygroundTurn:
        if (self.input is None) == (not self.tool_outputs):
            raise ValueError("send either 'input' (a message) or 'tool_outputs', not both and not neither")
        if self.tool_outputs and self.previous_response_id is None:
            raise ValueError("'tool_outputs' answer a response: name it in 'previous_response_id'")
        return self


def responses_request(turn: PlaygroundTurn) -> dict[str, Any]:
    """The Responses create request of a turn. Tools and instructions are sent with every turn, since a
    continuation by `previous_response_id` inherits neither."""
    tools: list[dict[str, Any]] = []
    if turn.vector_store_id:
        tools.append({"type": "file_search", "vector_store_ids": [turn.vector_store_id]})
    if turn.client_tool:
        tools.append({"type": "function", **turn.client_tool.model_dump()})
    if turn.mcp_server:
        tools.append({"type": "mcp", **turn.mcp_server.model_dump(), "require_approval": "never"})
    body: dict[str, Any] = {"model": turn.model, "stream": True}
    if turn.input is not None:
        body["input"] = turn.input
    else:
        body["input"] = [
            {"type": "function_call_output", "call_id": answer.call_id, "output": answer.output}
            for answer in turn.tool_outputs
        ]
    if turn.previous_response_id:
        body["previous_response_id"] = turn.previous_response_id
    if turn.instructions:
        body["instructions"] = turn.instructions
    if tools:
        body["tools"] = tools
    if turn.vector_store_id:
        body["include"] = ["file_search_call.results"]  # the page shows what the search found
    return body


def _refused(request: Request, status: int, detail: str) -> Response:
    return guard.secured(request, JSONResponse({"detail": detail}, status_code=status))


def _problems(invalid: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(part) for part in problem['loc']) or 'body'}: {problem['msg']}" for problem in invalid.errors()
    )


@router.get("")
async def playground(request: Request, services: ServicesDep) -> Response:
    principal = guard.signed_in(request)
    keys_required = bool(services.settings.key_entries())
    headers = credentials(request, keys_required)
    models = await get_json(request, "/v1/models", headers) or {"data": []}
    stores = await get_json(request, "/v1/vector_stores", headers, limit=STORES_SHOWN) or {"data": []}
    return page(
        request,
        "playground.html",
        models=[model["id"] for model in models["data"] if model.get("model_type") == "llm"],
        stores=stores["data"],
        tenant=principal.tenant,
        signed_in=keys_required,
        csrf_header=CSRF_HEADER,
    )


@router.post("/responses")
async def respond(request: Request, services: ServicesDep) -> Response:
    """One turn of the playground, streamed: the Responses API's own SSE events, or its refusal."""
    try:
        guard.signed_in(request)
        guard.check_csrf(request, {guard.CSRF_FIELD: request.headers.get(CSRF_HEADER, "")})
    except guard.SignInNeeded:
        return _refused(request, 401, "Sign in to the console first.")
    except guard.CsrfRefused:
        return _refused(request, 403, "This request is missing the console's security token (CSRF): reload the page.")
    try:
        turn = PlaygroundTurn.model_validate_json(await request.body())
    except ValidationError as invalid:
        return _refused(request, 400, _problems(invalid))
    headers = credentials(request, bool(services.settings.key_entries()))
    return guard.secured(request, await post_streamed(request, "/v1/responses", headers, responses_request(turn)))
