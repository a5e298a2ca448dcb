"""Errors of the OpenAI dialect's routes, in OpenAI's envelope: `{"error": {"message", "type", "param", "code"}}`.

The openai SDK reads `error.message` and raises by status; it retries 408, 409, 429 and 5xx, so every
deterministic refusal here is a 400 or a 404, never a 409 or FastAPI's 422. Routes get the envelope through
their route class, so the llama-stack dialect's `{"detail": …}` errors elsewhere stay as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.exceptions import HTTPException


class OpenAIError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code


def not_found(kind: str, identifier: str) -> OpenAIError:
    """OpenAI's wording: "Conversation with id 'conv_…' not found." """
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
    404: {"model": ErrorEnvelope, "description": "No such conversation or item (of this caller's tenant)"},
    "default": {"model": ErrorEnvelope, "description": "Any other error, in the same envelope"},
}
"""What the routes declare in the OpenAPI document."""


def error_response(
    status: int,
    message: str,
    param: str | None = None,
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    detail = ErrorDetail(message=message, type="invalid_request_error", param=param, code=code)
    return JSONResponse(status_code=status, content=ErrorEnvelope(error=detail).model_dump(), headers=headers)


def _param(location: tuple[int | str, ...]) -> str | None:
    """FastAPI's ("body", "items", 0, "role") as OpenAI names it: "items[0].role"."""
    name = ""
    for part in location[1:]:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return name or None


def _invalid(exc: RequestValidationError) -> JSONResponse:
    errors = exc.errors()
    said = "; ".join(f"{_param(tuple(e['loc'])) or 'body'}: {e['msg']}" for e in errors[:10])
    return error_response(400, f"Invalid request: {said}.", param=_param(tuple(errors[0]["loc"])) if errors else None)


class OpenAIErrorRoute(APIRoute):
    """A route whose refusals (its own, request validation, an oversized body) are OpenAI error envelopes."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def enveloped(request: Request) -> Response:
            try:
                return await handle(request)
            except OpenAIError as refused:
                return error_response(refused.status, refused.message, refused.param, refused.code)
            except RequestValidationError as invalid:
                return _invalid(invalid)
            except HTTPException as refused:
                if refused.status_code >= 500:
                    raise
                return error_response(refused.status_code, str(refused.detail), headers=refused.headers)

        return enveloped
