"""Error responses: every failure a caller can fix gets a 4xx and a sentence saying what to fix."""

from __future__ import annotations

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field


class ValidationIssue(BaseModel):
    loc: list[int | str]
    msg: str
    type: str


class ErrorResponse(BaseModel):
    """The body of every error response (documented in api/openapi.py)."""

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


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation_error)  # type: ignore[arg-type]
