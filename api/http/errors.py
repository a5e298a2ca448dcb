"""Error responses: every failure a caller can fix gets a 4xx and a sentence saying what to fix.

What the caller cannot fix is logged in full and answered without internals: no exception text,
driver messages, connection strings, host names or paths in a response body.
"""

from __future__ import annotations

import logging
import uuid

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from sqlalchemy.exc import SQLAlchemyError
from temporalio.service import RPCError

log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = "5"


class ValidationIssue(BaseModel):
    loc: list[int | str]
    msg: str
    type: str


class ErrorResponse(BaseModel):
    """The body of every error response (documented in api/http/openapi.py)."""

    detail: str = Field(description="What went wrong and, for a 4xx, what to change")
    errors: list[ValidationIssue] | None = Field(default=None, description="Each invalid field, on a 400")


def not_found(kind: str, identifier: str) -> HTTPException:
    return HTTPException(status_code=404, detail=f"{kind} {identifier} not found")


def _location(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc if part not in ("body",)) or "body"


async def _validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
    errors = exc.errors()
    summary = "; ".join(f"{_location(tuple(e['loc']))}: {e['msg']}" for e in errors[:10])
    return JSONResponse(
        status_code=400,
        content={
            "detail": f"Invalid request: {summary}",
            "errors": [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in errors],
        },
    )


def _logged(method: str, path: str, exc: Exception) -> str:
    """Log the failure with its traceback for the operator; the reference the caller can quote."""
    reference = uuid.uuid4().hex[:12]
    log.error("%s %s failed (reference %s)", method, path, reference, exc_info=exc)
    return reference


def unavailable(what: str, method: str, path: str, exc: Exception) -> JSONResponse:
    """The answer when a dependency failed (the store, Temporal): 503, a reference, and when to retry."""
    reference = _logged(method, path, exc)
    return JSONResponse(
        status_code=503,
        content={"detail": f"{what} is unavailable right now; retry shortly (reference {reference})."},
        headers={"Retry-After": RETRY_AFTER_SECONDS},
    )


def _dependency_failed(what: str) -> object:
    async def handle(request: Request, exc: Exception) -> JSONResponse:
        return unavailable(what, request.method, request.url.path, exc)

    return handle


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    reference = _logged(request.method, request.url.path, exc)
    return JSONResponse(
        status_code=500,
        content={"detail": f"Internal error; the operator's log has the details under reference {reference}."},
    )


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation_error)  # type: ignore[arg-type]
    # Connection failures surface as driver errors or as OSError (refused, unreachable, DNS).
    app.add_exception_handler(SQLAlchemyError, _dependency_failed("The store"))  # type: ignore[arg-type]
    app.add_exception_handler(OSError, _dependency_failed("A service this API depends on"))  # type: ignore[arg-type]
    app.add_exception_handler(RPCError, _dependency_failed("Temporal"))  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _unexpected)
