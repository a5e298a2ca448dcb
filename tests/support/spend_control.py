"""A session's `spend_control` as a user of the `openai` SDK 3.57 reaches it: the SDK dropped it from its Agents API
beta types (3.54 had it), so it is our documented extension, sent with `extra_body` and read from the session's
extra fields, which the SDK's models keep. The `budget_reached` status and event are in the same case: the SDK
reads them as plain strings."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class SpendControl(BaseModel):
    """A session's limit and what it has consumed, in whole USD cents; `limit` null when there is none."""

    limit: int | None = None
    consumed: int | None = None


def limit_body(limit: int | None) -> dict[str, Any]:
    """The `extra_body` that sets a session's limit on create or update; `None` removes the limit."""
    return {"spend_control": None if limit is None else {"limit": limit}}


def spend_of(session: Any) -> SpendControl | None:
    """The `spend_control` a session object came back with, or None when it had none."""
    shown = (session.model_extra or {}).get("spend_control")
    return None if shown is None else SpendControl.model_validate(shown)
