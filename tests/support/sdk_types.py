"""What we send, checked against the `openai` SDK's own types as strictly as they allow.

The SDK parses leniently (`construct`, no validation): a response missing a required field or carrying a string
where the types say a number still reaches its user, to fail later in their code. These checks validate the JSON
on the wire with pydantic in strict mode against the SDK's models instead, so a missing required field or a wrong
type fails. The SDK's models allow fields they do not declare (and keep them), so after validating, the validated
model is walked and every such field is reported by its path: a test then requires each to be one of our
documented extensions.

The SDK marks its tagged unions for its own parser only (`PropertyInfo(discriminator=...)`), so pydantic tries
every member; a failure would list every member's complaints. The complaints of members whose `type` literal
does not match the object are dropped, which leaves those of the member the object says it is.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from openai.types.beta.beta_response import BetaResponse
from openai.types.beta.beta_responses_server_event import BetaResponsesServerEvent
from openai.types.responses import Response, ResponseStreamEvent
from openai.types.responses.responses_server_event import ResponsesServerEvent
from pydantic import BaseModel, TypeAdapter, ValidationError

Wire = str | bytes | dict[str, Any]


@dataclass(frozen=True)
class Checked:
    """The outcome of one check: `errors` (a required field missing, a wrong type: the object is not what the types
    say), `unknown` (paths of fields the types do not declare, e.g. `output[0].content[0].logprobs_extra`)."""

    errors: tuple[str, ...]
    unknown: tuple[str, ...]

    def unknown_outside(self, allowed: Iterable[str]) -> list[str]:
        """The unknown fields not in `allowed`, written with `[]` for any index: `tools[].x`."""
        permitted = set(allowed)
        return [path for path in self.unknown if generic(path) not in permitted]

    def assert_conforms(self, allowed_unknown: Iterable[str] = ()) -> None:
        """Fail naming every error and every unknown field that is not an allowed extension."""
        strays = self.unknown_outside(allowed_unknown)
        assert not self.errors and not strays, {"errors": self.errors, "unknown fields": strays}


def generic(path: str) -> str:
    """`output[0].content[1].x` -> `output[].content[].x`: the form an allow-list is written in."""
    return re.sub(r"\[\d+\]", "[]", path)


def check_response(raw: Wire, *, beta: bool = False) -> Checked:
    """A response object (`Response`; `BetaResponse`, as `client.beta.responses` parses it, when `beta`)."""
    return check_against(BetaResponse if beta else Response, raw)


def check_stream_event(raw: Wire) -> Checked:
    """One server-sent event of an HTTP stream (`ResponseStreamEvent`)."""
    return check_against(ResponseStreamEvent, raw)


def check_websocket_event(raw: Wire, *, beta: bool = True) -> Checked:
    """One server event of WebSocket mode: `BetaResponsesServerEvent` (what `client.beta.responses.connect()`
    parses: it knows `response.inject.*`), or `ResponsesServerEvent` (`client.responses.connect()`)."""
    return check_against(BetaResponsesServerEvent if beta else ResponsesServerEvent, raw)


def check_against(sdk_type: Any, raw: Wire) -> Checked:
    """Any SDK type (a model or a union of models) against one JSON value."""
    text = json.dumps(raw) if isinstance(raw, dict) else raw
    try:
        validated = _adapter(sdk_type).validate_json(text, strict=True)
    except ValidationError as invalid:
        return Checked(errors=tuple(_complaints(invalid.errors())), unknown=())
    return Checked(errors=(), unknown=tuple(_undeclared(validated, "")))


@functools.cache
def _adapter(sdk_type: Any) -> TypeAdapter[Any]:
    return TypeAdapter(sdk_type)


def _complaints(errors: list[Any]) -> list[str]:
    dead = {tuple(error["loc"][:-1]) for error in errors if _is_wrong_member(error["loc"], error["type"])}
    alive = [error for error in errors if not any(tuple(error["loc"][: len(p)]) == p for p in dead)]
    if not alive:  # no member has the object's `type`: that is the complaint, once per place
        unmatched = {tuple(error["loc"][:-2]): error["input"] for error in errors if error["type"] == "literal_error"}
        return [f"{_path(loc)}: no type of this union is {kind!r}" for loc, kind in unmatched.items()]
    return [_complaint(error) for error in alive]


def _complaint(error: Any) -> str:
    said = f"{_path(error['loc'])}: {error['msg']}"
    return said if error["type"] == "missing" else f"{said} (got {error.get('input')!r:.80})"


def _is_wrong_member(loc: tuple[Any, ...], kind: str) -> bool:
    return kind == "literal_error" and len(loc) >= 2 and loc[-1] == "type" and _is_member_tag(loc[-2])


def _is_member_tag(part: Any) -> bool:
    """Pydantic names the member of a union it tried by its class (or type) name: `ResponseOutputText`, `str`."""
    return isinstance(part, str) and (part[:1].isupper() or "[" in part or part in {"str", "int", "float", "bool"})


def _path(loc: tuple[Any, ...]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif _is_member_tag(part):
            path += f"<{part}>"
        else:
            path += f".{part}" if path else str(part)
    return path or "(the object)"


def _undeclared(value: Any, path: str) -> list[str]:
    if isinstance(value, BaseModel):
        found = [_join(path, name) for name in (value.model_extra or {})]
        for name, field in type(value).model_fields.items():
            found += _undeclared(getattr(value, name), _join(path, field.alias or name))
        return found
    if isinstance(value, list):
        return [stray for index, item in enumerate(value) for stray in _undeclared(item, f"{path}[{index}]")]
    if isinstance(value, dict):
        return [stray for key, item in value.items() for stray in _undeclared(item, _join(path, str(key)))]
    return []


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name
