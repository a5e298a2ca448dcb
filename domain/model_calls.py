"""One model call's usage as its usage event carries it: the model, its tokens and what they cost.

The event (a runtime event of kind "usage", written once under its call's key) is what the Responses dialect sums
into a response's `usage`, and what the store counts into the tenant's daily usage in the transaction that writes
it (store/turns/model_usage.py): so a call is counted exactly when, and as often as, its event is written — once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ModelCall:
    model: str
    input_tokens: int
    output_tokens: int
    cost_microcents: int
    """Millionths of a US cent, at the model's configured price when the call was made (0 when unpriced)."""

    def event_fields(self) -> dict[str, Any]:
        """The usage event's fields (beside its kind and `step_id`)."""
        return {
            "model": self.model,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_microcents": self.cost_microcents,
        }


def model_call_in(body: dict[str, Any]) -> ModelCall | None:
    """The call a stored event's body reports, if it is a usage event that names its model (those written by
    earlier releases do not, and are not counted)."""
    runtime = body.get("runtime")
    if not isinstance(runtime, dict) or runtime.get("kind") != "usage" or not isinstance(runtime.get("model"), str):
        return None
    return ModelCall(
        runtime["model"],
        int(runtime.get("input_tokens") or 0),
        int(runtime.get("output_tokens") or 0),
        int(runtime.get("cost_microcents") or 0),
    )
