"""Top-level body parameters a route does not know are refused by name, as the OpenAI API refuses them.

Silently dropping a parameter makes a request mean something else than its sender asked (a `prompt` ignored,
a misspelt `temperture` lost); the SDK's `extra_body` merges its keys into the body, so they are refused the
same way. A parameter the OpenAI API has but this server does not implement gets its own code,
`unsupported_parameter`, so a caller can tell a typo from a missing feature; sent as null it asks for nothing
and passes.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from api.openai.errors import invalid


def refuse_unknown(body: Any, known: Collection[str], unsupported: Mapping[str, str] | None = None) -> None:
    """A 400 naming the first key of `body` (a JSON object) that is neither `known` nor a null `unsupported`
    one; `unsupported` maps a parameter to why it is not supported."""
    if not isinstance(body, dict):
        return
    for name, value in body.items():
        if name in known:
            continue
        why = (unsupported or {}).get(name)
        if why is None:
            raise invalid(f"Unknown parameter: '{name}'.", name, "unknown_parameter")
        if value is not None:
            raise invalid(f"Unsupported parameter: '{name}': {why}", name, "unsupported_parameter")


def field_names(model: type[BaseModel]) -> frozenset[str]:
    """The body keys a request model reads: its fields' names and aliases."""
    return frozenset(
        name for key, field in model.model_fields.items() for name in (key, field.alias) if name is not None
    )


class KnownParametersOnly(BaseModel):
    """A request body model (parsed by FastAPI) that refuses any top-level key it does not declare: with OpenAI's
    error, before pydantic's own; its schema says so (`additionalProperties: false`)."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _refuse_unknown(cls, body: Any) -> Any:
        refuse_unknown(body, field_names(cls))
        return body
