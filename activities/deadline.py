"""One deadline for an activity's work across all of its attempts.

Temporal bounds each attempt (start-to-close) and the number of attempts, so the time a caller waits
is their product plus the backoffs between them. Work whose users were promised one bound (an MCP tool
call, DA_TOOL_CALL_DEADLINE) measures what the earlier attempts spent from the activity's first
scheduling, gives each attempt only what is left, and is retried only while time remains.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import timedelta

from temporalio import activity

RETRY_DELAY = timedelta(seconds=1)
"""The wait before the next attempt, asked of Temporal with each retryable failure."""


@dataclass(frozen=True)
class Deadline:
    seconds: float
    """The whole deadline, retries included."""
    spent_before: float
    """Seconds from the first attempt's scheduling to this attempt's start (0 for the first attempt)."""
    started: float
    """This attempt's start, on the monotonic clock."""

    @classmethod
    def of_this_attempt(cls, seconds: float) -> Deadline:
        """Both times of the earlier attempts are the Temporal server's, so the hosts' clocks need not agree."""
        info = activity.info()
        spent = (info.started_time - info.scheduled_time).total_seconds() if info.attempt > 1 else 0.0
        return cls(seconds=seconds, spent_before=max(0.0, spent), started=time.monotonic())

    def remaining(self) -> float:
        return self.seconds - self.spent_before - (time.monotonic() - self.started)

    def allows_retry(self) -> bool:
        """Whether another attempt, after RETRY_DELAY, would still have time to run."""
        return self.remaining() > RETRY_DELAY.total_seconds()
