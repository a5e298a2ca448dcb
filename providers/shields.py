"""Shields: checks that can stop a turn when its input or output violates a policy.

Two kinds, configured by id in settings (`DA_SHIELDS` or `[shields."<id>"]` in the config file):
- `regex`: a violation when any pattern matches the new text (case-insensitive);
- `llama_guard`: a Llama-Guard-style classifier served by an OpenAI-compatible model, asked about
  the conversation; it answers `safe`, or `unsafe` and the violated categories.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from configuration.model_specs import ShieldSpec
from domain.turns import SafetyViolation
from providers.base import ChatRequest, FinishPart, whole_text
from providers.registry import ModelRegistry

_GUARD_PROMPT = """Task: Check if there is unsafe content in '{role}' messages in the conversation below \
according to our safety policy.

<BEGIN CONVERSATION>

{conversation}

<END CONVERSATION>

Provide your safety assessment for ONLY THE LAST {role} message in the above conversation:
- First line must read 'safe' or 'unsafe'.
- If unsafe, a second line must include a comma-separated list of violated categories."""


def _text(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def regex_violation(spec: ShieldSpec, texts: list[str]) -> SafetyViolation | None:
    for pattern in spec.patterns:
        for text in texts:
            if re.search(pattern, text, flags=re.IGNORECASE):
                return SafetyViolation(
                    violation_level="error", user_message=spec.violation_message, metadata={"matched": pattern}
                )
    return None


@dataclass(frozen=True)
class GuardVerdict:
    violation: SafetyViolation | None
    usage: FinishPart | None
    """The guard model's call as its provider reported it (token usage, when reported): a session's spend
    counts it."""


async def llama_guard_verdict(
    spec: ShieldSpec, models: ModelRegistry, conversation: list[dict[str, Any]], touchpoint: str
) -> GuardVerdict:
    assert spec.model is not None
    role = "Agent" if touchpoint == "assistant-output" else "User"
    lines = [
        f"{'Agent' if m['role'] == 'assistant' else 'User'}: {_text(m)}"
        for m in conversation
        if m["role"] in ("user", "assistant") and _text(m)
    ]
    prompt = _GUARD_PROMPT.format(role=role, conversation="\n\n".join(lines))
    model, name = models.resolve(spec.model)
    request = ChatRequest(model=name, messages=[{"role": "user", "content": prompt}], temperature=0.0, max_tokens=20)
    reply, usage = await whole_text(model, request)
    verdict, _, categories = reply.strip().partition("\n")
    if verdict.strip().lower() != "unsafe":
        return GuardVerdict(None, usage)
    violation = SafetyViolation(
        violation_level="error",
        user_message=spec.violation_message,
        metadata={"violation_type": categories.strip() or "unspecified"},
    )
    return GuardVerdict(violation, usage)
