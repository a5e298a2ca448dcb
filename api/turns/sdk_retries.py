"""An SDK's own retry of a create that carries no Idempotency-Key: which attempt it repeats.

The openai SDK and llama-stack-client (both made by Stainless) retry a request they saw fail in
transit (a connection lost as an API process died, a proxy's 5xx) on their own, with the same body,
and number each attempt in `x-stainless-retry-count`: 0 first, then 1, 2... Without a key, a retried
create would start a second turn. Each dialect finds the attempt a retry repeats (the same request,
lately, not failed or cancelled) and answers with it; a request sent again on purpose is numbered 0
and is always new.
"""

from __future__ import annotations

from datetime import timedelta

from domain.turns import TurnStatus

RETRY_COUNT_HEADER = "x-stainless-retry-count"
RETRY_WINDOW = timedelta(hours=1)
"""How far back a retry looks for the attempt it repeats (the openai SDK's own timeout is 10 minutes,
and it backs off between attempts)."""


def is_sdk_retry(retry_count: str | None) -> bool:
    """True for a request the SDK numbered 1 or more."""
    try:
        return int(retry_count or 0) >= 1
    except ValueError:  # not the SDK's header
        return False


def may_repeat(status: TurnStatus | None) -> bool:
    """Whether a retry may answer with an attempt whose turn is in this status: not one that failed or was
    cancelled (the retry is then a fresh attempt, as on OpenAI)."""
    return status not in (TurnStatus.FAILED, TurnStatus.CANCELLED)
