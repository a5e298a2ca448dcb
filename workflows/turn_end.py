"""Whether a model's answer ends the turn: one rule for the workflow, and for the inference activity
that writes such an end itself (contracts.TurnEnding), so the two cannot disagree."""

from __future__ import annotations

from domain.content import CompletionMessage


def ending(message: CompletionMessage, last_inference: bool) -> CompletionMessage | None:
    """The message the turn ends with, or None when it goes on to the message's tool calls.

    An answer without tool calls ends it, as does one cut off (out_of_tokens). So does one of the
    turn's last model call (max_infer_iters): its calls stay unexecuted, and end_of_turn tells
    clients not to resume."""
    if not message.tool_calls or message.stop_reason == "out_of_tokens":
        return message
    if last_inference:
        return message.model_copy(update={"stop_reason": "end_of_turn"})
    return None
