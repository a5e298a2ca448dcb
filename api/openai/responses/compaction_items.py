"""Compaction items in a request's context: checked, and read by the model as the summary they carry.

A compaction item stands for every item before it in the sequence the model would read: the model sees its
summary (a system message) in their place. Made by `POST /v1/responses/compact`, it keeps the user messages
before it, as the window that endpoint hands back holds them; made by a turn's own compaction step
(`context_management`), it replaces everything — that item is put before the input of the response that
compacted (in a chain and in a conversation alike), so the newest input always follows the summary.

Function call outputs whose call the summary replaced are dropped from what the model reads (a result
without its call is an invalid chat request); the items themselves stay where they are, and retrievable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from api.openai.errors import OpenAIError, invalid
from api.openai.responses.input_items import (
    CompactionItem,
    FunctionCallItem,
    FunctionCallOutputItem,
    InputItem,
    MessageItem,
)
from api.openai.responses.request import CreateResponse
from api.services import Services
from compaction.seal import Compacted, CompactionSeal, SealBroken
from compaction.summary import SUMMARY_PREFIX
from configuration.settings import Settings

NO_KEY = (
    "This server cannot read or make compaction items: its operator has not set DA_CREDENTIALS_KEY "
    "(`make run` generates one)."
)


def compaction_seal(settings: Settings) -> CompactionSeal | None:
    return CompactionSeal(settings.credentials_key) if settings.credentials_key else None


DEFAULT_COMPACT_THRESHOLD = 100_000
"""Estimated tokens a `context_management` entry without `compact_threshold` compacts above, when the server
sets no DA_COMPACT_THRESHOLD."""


def compact_threshold(settings: Settings, body: CreateResponse) -> int | None:
    """The threshold a new turn compacts its context above: the request's `context_management`, else the
    server's DA_COMPACT_THRESHOLD; None: no compaction. Asking for it where no key can seal the item is a 400."""
    entries = body.context_management or []
    if not entries:
        return settings.compact_threshold if settings.credentials_key else None
    if not settings.credentials_key:
        raise invalid(f"'context_management' asks for compaction, but {NO_KEY}", "context_management")
    return entries[0].compact_threshold or settings.compact_threshold or DEFAULT_COMPACT_THRESHOLD


async def refuse_interleaving(services: Services, body: CreateResponse, threshold: int | None) -> None:
    """A conversation compacts one response at a time: a create on a conversation where another response is
    still running is refused (409) when either compacts — a summary must cover everything before it."""
    if body.conversation_id is None:
        return
    for record in await services.store.responses.of_conversation(body.conversation_id, True):
        status = await services.store.turns.turn_status(record.turn_id)
        if status is None or status.is_final:
            continue
        if threshold is not None or record.request.get("context_management") or services.settings.compact_threshold:
            raise OpenAIError(
                409,
                f"Conversation {body.conversation_id} has a response still running ({record.response_id}) and "
                "compaction is on: its context would change under this one. Retry once that response has finished.",
                "conversation",
                "conversation_busy",
            )


def open_compactions(settings: Settings, tenant: str, items: Sequence[InputItem]) -> dict[int, Compacted]:
    """Each compaction item's content by its position in `items`; a 400 for one this server did not seal for
    this tenant (forged, altered, another deployment's or another tenant's)."""
    found = [(index, item) for index, item in enumerate(items) if isinstance(item, CompactionItem)]
    if not found:
        return {}
    seal = compaction_seal(settings)
    if seal is None:
        raise invalid(f"The input holds a compaction item, but {NO_KEY}", "input")
    opened: dict[int, Compacted] = {}
    for index, item in found:
        try:
            opened[index] = seal.open(tenant, item.encrypted_content)
        except SealBroken as broken:
            name = f"'{item.id}'" if item.id else "a compaction item"
            raise invalid(f"Invalid compaction item {name}: {broken}.", "input", "invalid_encrypted_content") from None
    return opened


def as_read(items: Sequence[InputItem], opened: dict[int, Compacted]) -> list[InputItem]:
    """The items as the model reads them: each compaction item's summary in place of what it stands for."""
    read: list[InputItem] = []
    for index, item in enumerate(items):
        compacted = opened.get(index)
        if compacted is None:
            if not isinstance(item, CompactionItem):  # an unopened one cannot be: open_compactions saw them all
                read.append(item)
            continue
        if compacted.keeps == "user_messages":
            read = [kept for kept in read if isinstance(kept, MessageItem) and kept.role == "user"]
        else:
            read = []
        read.append(MessageItem(role="system", content=SUMMARY_PREFIX + compacted.summary))
    return _without_orphan_results(read)


def _without_orphan_results(items: list[InputItem]) -> list[InputItem]:
    calls = {item.call_id for item in items if isinstance(item, FunctionCallItem)}
    return [item for item in items if not (isinstance(item, FunctionCallOutputItem) and item.call_id not in calls)]


def compaction_first(inputs: list[dict[str, Any]], outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A response's input and output items in the order the model reads them next: a compaction item its
    turn made (the first output item) goes before the input it was made for."""
    if outputs and outputs[0].get("type") == "compaction":
        return [outputs[0], *inputs, *outputs[1:]]
    return [*inputs, *outputs]


def user_messages(items: Sequence[InputItem]) -> list[MessageItem]:
    return [item for item in items if isinstance(item, MessageItem) and item.role == "user"]
