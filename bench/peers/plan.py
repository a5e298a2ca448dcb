"""How much a comparison measures (`--quick` takes less)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PeerPlan:
    iterations: int = 50
    warmup: int = 5
    clients: int = 20
    responses_per_client: int = 10
    sessions: int = 20
    turns_per_session: int = 10
    corpus_mb: float = 5.0
    corpus_files: int = 20
    searches: int = 100
    timeout: float = 60.0

    @classmethod
    def quick(cls) -> PeerPlan:
        return cls(iterations=8, warmup=2, responses_per_client=3, turns_per_session=3, corpus_mb=1.0, searches=20)
