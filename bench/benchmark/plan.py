"""What a run measures: how many iterations, sessions, turns and clients (`--quick` takes fewer)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Plan:
    iterations: int
    warmup: int
    sessions: int
    turns_per_session: int
    turn_timeout: float
    growth_turns: int
    growth_window: int
    response_clients: int
    responses_per_client: int
    responses_only: bool
