"""A compaction item's `encrypted_content`: its summary, sealed with a key only this deployment holds.

A summary is trusted context — the model reads it in place of the conversation it replaced — so a client
must neither read it nor forge one. It is sealed (configuration/sealing.py) under a key derived from
DA_CREDENTIALS_KEY, the Fernet key the APIs and workers already share for MCP credentials (`make run`
generates one): a separate key by derivation, so a sealed credential never opens as a summary or the other
way round. The sealed document names its tenant: another tenant's item is refused as a
forged one is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from configuration.sealing import Sealer, Unsealable

_DERIVATION = b"durable-agents compaction items v1"

Keeps = Literal["user_messages", "nothing"]
"""What of the items before a compaction item the model still reads: `/responses/compact` hands back the
user messages with the summary (its window keeps them); a turn's own compaction replaces everything."""


class SealBroken(ValueError):
    """The content was not sealed by this deployment for this tenant (forged, altered, foreign or truncated)."""


@dataclass(frozen=True)
class Compacted:
    summary: str
    keeps: Keeps


class CompactionSeal:
    def __init__(self, credentials_key: str) -> None:
        self._sealer = Sealer(credentials_key, purpose=_DERIVATION)

    def seal(self, tenant: str, summary: str, keeps: Keeps) -> str:
        document = {"v": 1, "tenant": tenant, "summary": summary, "keeps": keeps}
        return self._sealer.seal_json(document)

    def open(self, tenant: str, sealed: str) -> Compacted:
        try:
            document = self._sealer.open_json(sealed)
        except Unsealable:
            raise SealBroken("its encrypted_content was not produced by this server or has been altered") from None
        if document.get("tenant") != tenant:
            raise SealBroken("it was produced for another tenant")
        if document.get("keeps") not in ("user_messages", "nothing") or not isinstance(document.get("summary"), str):
            raise SealBroken("its content is not a compaction this server understands")
        return Compacted(summary=document["summary"], keeps=document["keeps"])
