"""Fetching a turn's URL documents and appending their text to its last input message."""

from __future__ import annotations

import httpx2
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.heartbeat import heartbeating
from domain.content import with_appended_text
from outbound.http import Outbound, ReplyTooLarge
from outbound.policy import OutboundRefused
from store.repository import Store
from workflows.contracts import (
    DOCUMENT_UNAVAILABLE,
    FETCH_DOCUMENTS_ACTIVITY,
    FetchDocumentsRequest,
    FetchDocumentsResult,
)


def _unavailable(url: str, why: str) -> ApplicationError:
    return ApplicationError(f"Document {url} could not be used: {why}", type=DOCUMENT_UNAVAILABLE, non_retryable=True)


class DocumentActivities:
    def __init__(self, store: Store, outbound: Outbound, max_document_bytes: int) -> None:
        self._store = store
        self._outbound = outbound
        self._max_bytes = max_document_bytes

    async def _fetch(self, client: httpx2.AsyncClient, url: str) -> str:
        try:
            async with self._outbound.get_following_redirects(client, url) as response:
                if response.status_code >= 500 or response.status_code == 429:
                    response.raise_for_status()  # retried by Temporal
                if response.status_code >= 400:
                    raise _unavailable(url, f"HTTP {response.status_code}")
                media_type = response.headers.get("content-type", "text/plain").split(";")[0].strip()
                if not media_type.startswith("text/"):
                    raise _unavailable(url, f"it is {media_type}, not text/*")
                await response.aread()
                return response.text
        except OutboundRefused as refused:
            raise _unavailable(url, str(refused)) from None
        except ReplyTooLarge:
            raise _unavailable(url, f"it is larger than {self._max_bytes:,} bytes") from None

    @activity.defn(name=FETCH_DOCUMENTS_ACTIVITY)
    async def fetch_documents(self, request: FetchDocumentsRequest) -> FetchDocumentsResult:
        turn = await self._store.turns.get_turn(request.session_id, request.turn_id)
        if turn is None:
            raise ApplicationError(f"Turn {request.turn_id} not found in the store", non_retryable=True)
        async with heartbeating(), self._outbound.client(self._max_bytes) as client:
            texts = [await self._fetch(client, url) for url in request.urls]
        messages = with_appended_text(list(turn.input_messages), "\n".join(texts))
        await self._store.turns.set_input_messages(request.turn_id, messages)
        return FetchDocumentsResult()  # the messages stay in the turn's row: they can be megabytes
