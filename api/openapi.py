"""The OpenAPI schema as callers actually meet the API, where FastAPI's generated one falls short.

- Errors: an invalid request is 400 (api/errors.py), not FastAPI's 422; a body can be refused with 413
  (api/body_limit.py); and every operation declares the `{"detail": ...}` shape that all its errors share.
- Streams: an endpoint that can answer with Server-Sent Events says so with `text/event-stream`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, get_args, get_type_hints

from fastapi import APIRouter, FastAPI
from fastapi.responses import StreamingResponse
from fastapi.routing import APIRoute

from api.errors import ErrorResponse

_SCHEMA_REF = "#/components/schemas/{model}"
_ERROR = {"application/json": {"schema": {"$ref": _SCHEMA_REF.format(model="ErrorResponse")}}}
_SSE = {
    "text/event-stream": {
        "schema": {"type": "string", "description": "Events, each an `id:` line and a `data:` line of JSON"}
    }
}


def install_openapi(app: FastAPI, routers: Sequence[APIRouter], prefix: str) -> None:
    """Amend the generated schema of `app`, which serves `routers` under `prefix`."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = generate()  # which also caches it in app.openapi_schema
            _document_errors(schema)
            for router in routers:
                _document_streams(schema, router, prefix)
        return app.openapi_schema  # type: ignore[return-value]

    app.openapi = openapi  # type: ignore[method-assign]


def _document_errors(schema: dict[str, Any]) -> None:
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    definition = ErrorResponse.model_json_schema(ref_template=_SCHEMA_REF)
    components.update(definition.pop("$defs", {}))
    components["ErrorResponse"] = definition
    for operation in (op for path in schema.get("paths", {}).values() for op in path.values()):
        responses = operation.setdefault("responses", {})
        if responses.pop("422", None) is not None:
            responses["400"] = {"description": "Invalid request: `detail` says what to change", "content": _ERROR}
        if "requestBody" in operation:
            responses["413"] = {"description": "The body is larger than DA_MAX_REQUEST_BYTES", "content": _ERROR}
        responses["default"] = {
            "description": "Any other error: 401 without an accepted API key (when the server has DA_API_KEYS), "
            "404 for an unknown id, 409 for a conflict with the current state, 5xx when the runtime failed",
            "content": _ERROR,
        }
    for unused in ("HTTPValidationError", "ValidationError"):  # FastAPI's, for the 422 it documented
        components.pop(unused, None)


def _document_streams(schema: dict[str, Any], router: APIRouter, prefix: str) -> None:
    for route in router.routes:
        if not isinstance(route, APIRoute):
            continue
        returns = get_type_hints(route.endpoint).get("return")
        if returns is not StreamingResponse and StreamingResponse not in get_args(returns):
            continue
        for method in route.methods:
            ok = schema["paths"][prefix + route.path_format][method.lower()]["responses"]["200"]
            # Only streams, or a stream when the request asks for one (`stream: true`) and JSON otherwise.
            ok["content"] = _SSE if returns is StreamingResponse else {**ok.get("content", {}), **_SSE}
