"""The OpenAPI schema as callers actually meet the API, where FastAPI's generated one falls short.

- Errors: an invalid request is 400 (api/http/errors.py), not FastAPI's 422; a body can be refused with 413
  (api/guards/body_limit.py); and every operation declares the `{"detail": ...}` shape that all its errors share.
- Streams: an endpoint that can answer with Server-Sent Events says so with `text/event-stream`, and what
  each event's `data` holds.
- Parameters: an optional query or header parameter is left out, never sent as null (HTTP has no null).
- Tagged unions: a member's tag (`role`, `type`, …) has a default, so pydantic leaves it out of `required`;
  but the union cannot tell its members apart without it, so requests must send it and responses always do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, get_args, get_type_hints

from fastapi import APIRouter, FastAPI
from fastapi.responses import StreamingResponse
from fastapi.routing import APIRoute
from pydantic import TypeAdapter

from api.http.errors import ErrorResponse
from domain.events import Chunk

_SCHEMA_REF = "#/components/schemas/{model}"
_ERROR = {"application/json": {"schema": {"$ref": _SCHEMA_REF.format(model="ErrorResponse")}}}


def install_openapi(app: FastAPI, routers: Sequence[APIRouter], prefix: str) -> None:
    """Amend the generated schema of `app`, which serves `routers` under `prefix`."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = generate()  # which also caches it in app.openapi_schema
            _document_errors(schema)
            events = _stream_events(schema)
            for router in routers:
                _document_streams(schema, router, prefix, events)
            _require_tags(schema)
            _drop_null_parameters(schema)
        return app.openapi_schema  # type: ignore[return-value]

    app.openapi = openapi  # type: ignore[method-assign]


def _document_errors(schema: dict[str, Any]) -> None:
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    definition = ErrorResponse.model_json_schema(ref_template=_SCHEMA_REF)
    components.update(definition.pop("$defs", {}))
    components["ErrorResponse"] = definition
    for operation in (op for path in schema.get("paths", {}).values() for op in path.values()):
        responses = operation.setdefault("responses", {})
        # A route of another dialect declares its own error shape (its "default"); it is kept.
        own = responses.get("default", {}).get("content")
        if responses.pop("422", None) is not None:
            responses.setdefault(
                "400", {"description": "Invalid request: `detail` says what to change", "content": _ERROR}
            )
        if "requestBody" in operation:
            responses["413"] = {
                "description": "The body is larger than DA_MAX_REQUEST_BYTES, or a turn's messages or tool results "
                "larger than DA_MAX_MESSAGE_BYTES",
                "content": own or _ERROR,
            }
        responses.setdefault(
            "default",
            {
                "description": "Any other error: 401 without an accepted API key (when the server has DA_API_KEYS), "
                "404 for an unknown id, 409 for a conflict with the current state, 5xx when the runtime failed",
                "content": _ERROR,
            },
        )
    for unused in ("HTTPValidationError", "ValidationError"):  # FastAPI's, for the 422 it documented
        components.pop(unused, None)


def _stream_events(schema: dict[str, Any]) -> dict[str, Any]:
    """The content of a turn's event stream: each event's `data` is a chunk, as JSON."""
    chunk = TypeAdapter(Chunk).json_schema(mode="serialization", ref_template=_SCHEMA_REF)
    components = schema["components"]["schemas"]
    for name, definition in chunk.pop("$defs", {}).items():
        components.setdefault(name, definition)  # the models FastAPI already put there are the same
    data = {"type": "string", "contentMediaType": "application/json", "contentSchema": chunk}
    event = {
        "type": "object",
        "description": "One event; `id` orders a turn's events (send it back as Last-Event-ID to resume)",
        "properties": {"id": {"type": "string"}, "event": {"type": "string"}, "data": data},
        "required": ["data"],
    }
    return {"text/event-stream": {"schema": event}}


def _document_streams(schema: dict[str, Any], router: APIRouter, prefix: str, events: dict[str, Any]) -> None:
    for route in router.routes:
        if not isinstance(route, APIRoute):
            continue
        returns = get_type_hints(route.endpoint).get("return")
        if returns is not StreamingResponse and StreamingResponse not in get_args(returns):
            continue
        for method in route.methods or ():
            ok = schema["paths"][prefix + route.path_format][method.lower()]["responses"]["200"]
            # Only streams, or a stream when the request asks for one (`stream: true`) and JSON otherwise.
            ok["content"] = events if returns is StreamingResponse else {**ok.get("content", {}), **events}


def _require_tags(schema: dict[str, Any]) -> None:
    components = schema["components"]["schemas"]
    for union in _discriminated_unions(schema):
        tag = union["discriminator"]["propertyName"]
        for ref in union["discriminator"].get("mapping", {}).values():
            member = components[ref.removeprefix(_SCHEMA_REF.format(model=""))]
            if tag not in member.setdefault("required", []):
                member["required"].insert(0, tag)


def _discriminated_unions(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, list):
        return [union for item in node for union in _discriminated_unions(item)]
    if not isinstance(node, dict):
        return []
    discriminator = node.get("discriminator")
    found = [node] if isinstance(discriminator, dict) and "propertyName" in discriminator else []
    return found + [union for value in node.values() for union in _discriminated_unions(value)]


def _drop_null_parameters(schema: dict[str, Any]) -> None:
    for operation in (op for path in schema.get("paths", {}).values() for op in path.values()):
        for parameter in operation.get("parameters", []):
            options = parameter.get("schema", {}).get("anyOf")
            if options and {"type": "null"} in options:
                kept = [option for option in options if option != {"type": "null"}]
                del parameter["schema"]["anyOf"]
                parameter["schema"].update(kept[0] if len(kept) == 1 else {"anyOf": kept})
