"""The OpenAI error envelope on the Responses and Conversations paths.

Every non-2xx answer under /v1/responses and /v1/conversations is `{"error": {"message", "type", "param",
"code"}}`, which the openai and llama-stack clients read (`body["error"]["message"]`). Rather than teach every
shared piece (auth's 401, the rate limit's 429, the body limit's 413, FastAPI's validation errors, the store
and Temporal handlers' 503s) a second shape, one outermost middleware rewrites the `detail` bodies they
produce on these paths; the llama-stack routes keep their `detail` shape untouched.

Handlers of this dialect raise `OpenAIError` to choose `param` and `code` themselves. FastAPI's 422 becomes
400: the openai SDK retries nothing in the 4xx range but 408/409/429, and a validation failure is final.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import HTTPException
from pydantic import BaseModel
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

AGENTS_PATH = "/v1/agents"
PREFIXES = (
    "/v1/responses",
    "/v1/conversations",
    "/v1/webhook_endpoints",
    "/v1/webhook_event_types",
    "/v1/embeddings",
    "/v1/files",
    "/v1/vector_stores",
    "/v1/agents/sessions",  # the Agents API beta's own paths (but llama-stack's `…/{agent_id}/session…` shapes)
    "/v1/agents/automations",  # likewise
    "/v1/containers",
)

_LLAMA_STACK_AGENT_PARTS = ("session", "sessions")


def _is_openai_path(path: str) -> bool:
    """One of the OpenAI dialects' paths, but for llama-stack's `/v1/agents/{agent_id}/session…` whatever the id."""
    if not path.startswith(PREFIXES):
        return False
    parts = path.split("/")  # "", "v1", "agents", the id, what follows
    return not path.startswith(f"{AGENTS_PATH}/") or len(parts) < 5 or parts[4] not in _LLAMA_STACK_AGENT_PARTS


_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
    429: "rate_limit_error",
}
_CODES = {401: "invalid_api_key", 429: "rate_limit_exceeded"}


class OpenAIError(HTTPException):
    """A refusal in the OpenAI shape: `param` names the request field to fix, `code` is machine-readable."""

    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(
            status,
            {"message": message, "param": param, "code": code, "type": error_type(status)},
            headers={"x-should-retry": "false"} if status < 500 else None,
        )


def invalid(message: str, param: str | None = None, code: str | None = None) -> OpenAIError:
    return OpenAIError(400, message, param, code)


def not_found(kind: str, identifier: str) -> OpenAIError:
    return OpenAIError(404, f"{kind} with id '{identifier}' not found.")


class ErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None
    code: str | None


class ErrorEnvelope(BaseModel):
    """The body of every error of an OpenAI-dialect route."""

    error: ErrorDetail


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorEnvelope, "description": "Invalid request: `error.message` says what to change"},
    404: {"model": ErrorEnvelope, "description": "No such object (of this caller's tenant)"},
    "default": {"model": ErrorEnvelope, "description": "Any other error, in the same envelope"},
}
"""What the routes declare in the OpenAPI document."""


def error_type(status: int) -> str:
    if status >= 500:
        return "server_error"
    return _TYPES.get(status, "invalid_request_error")


def _param(loc: list[Any]) -> str | None:
    """`["body", "input", 2, "content"]` → `input`: the request field, as OpenAI names params."""
    fields = [part for part in loc if part not in ("body", "query", "path", "header")]
    return str(fields[0]) if fields else None


def envelope(status: int, body: Any) -> dict[str, Any]:
    """The OpenAI body for a non-2xx answer whose body is `body` (a `detail` body, or anything else)."""
    if isinstance(body, dict) and isinstance(body.get("error"), dict) and "message" in body["error"]:
        error = dict(body["error"])
    else:
        detail = body.get("detail") if isinstance(body, dict) else body
        if isinstance(detail, dict) and "message" in detail:
            error = dict(detail)
        elif isinstance(detail, list):  # FastAPI's own 422 list
            first = detail[0] if detail else {}
            where = ".".join(str(p) for p in first.get("loc", []) if p != "body")
            error = {"message": f"Invalid request: {where}: {first.get('msg', 'invalid')}"}
            error["param"] = _param(list(first.get("loc", [])))
        else:
            error = {"message": str(detail) if detail is not None else f"HTTP {status}"}
            issues = body.get("errors") if isinstance(body, dict) else None
            if issues:
                error["param"] = _param(list(issues[0].get("loc", [])))
                if issues[0].get("type") == "missing":
                    error["code"] = "missing_required_parameter"
    error.setdefault("type", error_type(status))
    error.setdefault("param", None)
    error.setdefault("code", _CODES.get(status))
    return {"error": {key: error[key] for key in ("message", "type", "param", "code")}}


def _names_agents_beta(scope: Scope) -> bool:
    """A request of the Agents API beta (`OpenAI-Beta: agents=v1`, api/openai/agents/routing.py): OpenAI's shape too."""
    return any(name == b"openai-beta" and b"agents=" in value for name, value in scope.get("headers") or ())


class OpenAIErrorEnvelope:
    """Rewrites non-2xx JSON answers on the Responses/Conversations paths into the OpenAI envelope.

    Added as the outermost middleware so that it also sees what the host check, auth, rate limit and
    body limit answer before a route runs. Streams (2xx) pass through untouched.
    """

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        ours = _is_openai_path(scope["path"])
        if not (ours or scope["path"].startswith(AGENTS_PATH) or _names_agents_beta(scope)):
            await self._app(scope, receive, send)
            return
        start: Message | None = None
        chunks: list[bytes] = []

        async def rewriting_send(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                # Decided at the answer: a request without the header may have been routed to the Agents API
                # by its body by then (api/openai/agents/routing.py adds the header to this same scope).
                if message["status"] < 400 or not (ours or _names_agents_beta(scope)):
                    await send(message)
                    return
                start = message
                return
            if start is None or message["type"] != "http.response.body":
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            await self._send_rewritten(start, b"".join(chunks), send)

        await self._app(scope, receive, rewriting_send)

    @staticmethod
    async def _send_rewritten(start: Message, raw: bytes, send: Send) -> None:
        status = 400 if start["status"] == 422 else start["status"]
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = {"detail": raw.decode(errors="replace").strip() or None}
        content = json.dumps(envelope(status, body)).encode()
        headers = MutableHeaders(raw=list(start.get("headers", [])))
        headers["content-length"] = str(len(content))
        headers["content-type"] = "application/json"
        await send({"type": "http.response.start", "status": status, "headers": headers.raw})
        await send({"type": "http.response.body", "body": content})
