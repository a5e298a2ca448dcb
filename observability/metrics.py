"""Our Prometheus metrics (names in docs/operations.md, "Metrics").

Counters and histograms are per process: Prometheus sums them across the API and worker processes
it scrapes. Label values are bounded: statuses and outcomes are fixed sets; model ids and tool
names come from the configured models and the registered toolgroups, and past `LABEL_VALUES_LIMIT`
distinct values the rest are counted as `other`. No ids and no free text.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import Counter, Gauge, Histogram

LABEL_VALUES_LIMIT = 200

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)

TURNS_STARTED = Counter("durable_agents_turns_started", "Turns started by this API process")
TURNS_ENDED = Counter(
    "durable_agents_turns_ended",
    "Turns that reached a final status (completed, failed, cancelled, expired), recorded by the worker",
    ["status"],
)
MODEL_CALL_SECONDS = Histogram(
    "durable_agents_model_call_duration_seconds",
    "One model call (one attempt of an inference activity), from the request to the end of the reply",
    ["model", "outcome"],
    buckets=_LATENCY_BUCKETS,
)
MODEL_FIRST_TOKEN_SECONDS = Histogram(
    "durable_agents_model_time_to_first_token_seconds",
    "From the model request to the first text or tool call of its reply",
    ["model"],
    buckets=_LATENCY_BUCKETS,
)
MODEL_TOKENS = Counter(
    "durable_agents_model_tokens",
    "Tokens the model provider reported using, by kind (prompt, completion)",
    ["model", "kind"],
)
EARLY_MODEL_CALLS = Counter(
    "durable_agents_early_model_calls",
    "Foreground responses' first model calls begun while their workflow started, by outcome: adopted by the "
    "inference activity, or abandoned (cancelled unused)",
    ["outcome"],
)
TOOL_CALL_SECONDS = Histogram(
    "durable_agents_tool_call_duration_seconds",
    "One server-side tool call (one attempt of a tool activity)",
    ["tool"],
    buckets=_LATENCY_BUCKETS,
)
TOOL_CALL_ERRORS = Counter(
    "durable_agents_tool_call_errors",
    "Server-side tool calls that answered with an error or raised",
    ["tool"],
)


class BoundedLabel:
    """A label's values as given, until `limit` distinct ones were seen; `other` after that."""

    def __init__(self, limit: int = LABEL_VALUES_LIMIT) -> None:
        self._limit = limit
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, value: str) -> str:
        if value in self._seen:
            return value
        with self._lock:
            if len(self._seen) >= self._limit:
                return "other"
            self._seen.add(value)
        return value


model_label = BoundedLabel()
tool_label = BoundedLabel()


class ModelCall:
    """What one model call reports while it runs: its first token and its token usage."""

    def __init__(self, model: str, started: float | None = None) -> None:
        self.model = model_label(model)
        self.started = time.monotonic() if started is None else started
        self._first_token_seen = False

    def first_token(self) -> None:
        if not self._first_token_seen:
            self._first_token_seen = True
            MODEL_FIRST_TOKEN_SECONDS.labels(self.model).observe(time.monotonic() - self.started)

    def usage(self, prompt_tokens: int | None, completion_tokens: int | None) -> None:
        if prompt_tokens:
            MODEL_TOKENS.labels(self.model, "prompt").inc(prompt_tokens)
        if completion_tokens:
            MODEL_TOKENS.labels(self.model, "completion").inc(completion_tokens)


@contextmanager
def model_call(model: str, started: float | None = None) -> Iterator[ModelCall]:
    """Time a model call; `outcome` is `ok` when the reply was read to its end, else `error`. `started`: when
    its request went out, if before now (time.monotonic(); a call begun early, activities/early_inference.py)."""
    call = ModelCall(model, started)
    outcome = "error"
    try:
        yield call
        outcome = "ok"
    finally:
        MODEL_CALL_SECONDS.labels(call.model, outcome).observe(time.monotonic() - call.started)


@contextmanager
def tool_call(tool: str) -> Iterator[None]:
    """Time a tool call; one that raises is an error (one that answers with an error is counted by the caller)."""
    label = tool_label(tool)
    started = time.monotonic()
    try:
        yield
    except BaseException:
        TOOL_CALL_ERRORS.labels(label).inc()
        raise
    finally:
        TOOL_CALL_SECONDS.labels(label).observe(time.monotonic() - started)


def tool_answered_with_error(tool: str) -> None:
    TOOL_CALL_ERRORS.labels(tool_label(tool)).inc()


RETENTION_PRUNED = Counter(
    "durable_agents_retention_pruned_rows",
    "Rows retention deleted, by kind (responses, conversations, sessions, turns, compactions) and reason (ttl, tenant)",
    ["kind", "reason"],
)
RETENTION_OLDEST_AGE = Gauge(
    "durable_agents_retention_oldest_age_seconds",
    "Age of the oldest row of a kind that has a time-to-live, as the last retention sweep left it (0: none left)",
    ["kind"],
)
