"""A tiny OpenAI-compatible chat-completions server with configurable latency, for benchmarks.

    .venv/bin/python bench/model_server.py --port 8400 --ttft-ms 100 --token-ms 30

It answers by rule, not from a script, so any number of concurrent sessions can use it:

- the request offers tools and the last message is a user message containing the word "tool":
  one call to the first offered tool, with `{}` arguments;
- the last message is a tool result: the text "done";
- the last user message asks for an answer "in N words": N words (at most 5000);
- otherwise a fixed sentence of ten words.

`POST /v1/embeddings` answers any model id with hashed bag-of-words vectors (`--embedding-dim`, 256 by
default): deterministic, cheap, and alike for texts that share words, so a benchmark can point a server's
vector stores here instead of at a real embedding model.

Chat replies always stream (SSE, OpenAI chunk format). `--ttft-ms` delays the first byte of the body,
`--token-ms` spaces the following content deltas. Each request's arrival and first-token send
times are recorded on this machine's monotonic clock (`time.monotonic()`, which is CLOCK_MONOTONIC
and so shared by every process here) and served by `GET /bench/requests`, so a benchmark can
measure how long the runtime takes to relay the model's first token to its own client.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import math
import re
import struct
import threading
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

SENTENCE = "This is a short fixed answer from the benchmark model."
TOOL_RESULT_TEXT = "done"
_TOOL_WORD = re.compile(r"\btool\b", re.IGNORECASE)
_WORD_COUNT = re.compile(r"\bin (\d+) words\b", re.IGNORECASE)
_MAX_WORDS = 5000
_MAX_RECORDS = 100_000
_EMBEDDING_DIM = 256
_WORD = re.compile(r"\w+")


@dataclass
class RequestRecord:
    """When one chat request arrived and when its first token left, for latency attribution."""

    request_id: str
    last_user_text: str
    received_at: float
    first_token_at: float | None = None
    reply_kind: str = ""


@dataclass(frozen=True)
class Reply:
    text: str = ""
    tool_name: str | None = None


def _text_of(content: Any) -> str:
    """Message content is a string or a list of OpenAI content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return _text_of(message.get("content"))
    return ""


def choose_reply(body: dict[str, Any]) -> Reply:
    """The three rules of the module docstring."""
    messages: list[dict[str, Any]] = body.get("messages") or []
    tools: list[dict[str, Any]] = body.get("tools") or []
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        return Reply(text=TOOL_RESULT_TEXT)
    if tools and last.get("role") == "user" and _TOOL_WORD.search(_text_of(last.get("content"))):
        return Reply(tool_name=tools[0]["function"]["name"])
    asked = _WORD_COUNT.search(_text_of(last.get("content"))) if last.get("role") == "user" else None
    if asked:
        vocabulary = SENTENCE.rstrip(".").split(" ")
        count = min(int(asked.group(1)), _MAX_WORDS)
        return Reply(text=" ".join(vocabulary[i % len(vocabulary)] for i in range(count)) + ".")
    return Reply(text=SENTENCE)


def _chunk(completion_id: str, model: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    payload = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(payload, separators=(',', ':'))}\n\n".encode()


def _tool_call_deltas(name: str) -> list[dict[str, Any]]:
    """Name first, arguments after, as OpenAI streams them; call ids are unique across the run."""
    call_id = f"call_{uuid.uuid4().hex[:24]}"
    head = {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
    return [{"tool_calls": [head]}, {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}]


class HashedEmbeddings:
    """Each word adds ±1 at a bucket its hash picks; the sum is scaled to unit length."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self._buckets: dict[str, tuple[int, float]] = {}

    def _bucket(self, word: str) -> tuple[int, float]:
        found = self._buckets.get(word)
        if found is None:
            digest = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
            found = (digest % self.dimension, 1.0 if digest >> 63 else -1.0)
            if len(self._buckets) < 1_000_000:
                self._buckets[word] = found
        return found

    def embed(self, text: str) -> list[float]:
        vector = [0.0] * self.dimension
        for word in _WORD.findall(text.lower()):
            index, sign = self._bucket(word)
            vector[index] += sign
        norm = math.sqrt(sum(value * value for value in vector)) or 1.0
        return [value / norm for value in vector]


def _embedding_body(embeddings: HashedEmbeddings, body: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI embeddings answer; `encoding_format` "base64" (the openai SDK's default) packs float32s."""
    given = body.get("input")
    texts = [given] if isinstance(given, str) else list(given or [])
    as_base64 = body.get("encoding_format") == "base64"
    data = []
    for index, text in enumerate(texts):
        vector = embeddings.embed(text if isinstance(text, str) else " ".join(map(str, text)))
        packed = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode() if as_base64 else vector
        data.append({"object": "embedding", "index": index, "embedding": packed})
    tokens = sum(len(_WORD.findall(str(text))) for text in texts)
    return {
        "object": "list",
        "data": data,
        "model": body.get("model", "bench-embedding"),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


class LatencyModel:
    """The app's state: latency settings and the per-request records."""

    def __init__(self, ttft_ms: float, token_ms: float) -> None:
        self.ttft = max(ttft_ms, 0.0) / 1000
        self.token = max(token_ms, 0.0) / 1000
        self.records: deque[RequestRecord] = deque(maxlen=_MAX_RECORDS)
        self._lock = threading.Lock()

    def record(self, body: dict[str, Any], reply: Reply) -> RequestRecord:
        record = RequestRecord(
            request_id=uuid.uuid4().hex,
            last_user_text=_last_user_text(body.get("messages") or []),
            received_at=time.monotonic(),
            reply_kind="tool_call" if reply.tool_name else ("done" if reply.text == TOOL_RESULT_TEXT else "text"),
        )
        with self._lock:
            self.records.append(record)
        return record

    def matching(self, contains: str | None) -> list[RequestRecord]:
        with self._lock:
            return [r for r in self.records if contains is None or contains in r.last_user_text]

    async def chunks(self, reply: Reply, record: RequestRecord, model: str) -> AsyncIterator[bytes]:
        if self.ttft:
            await asyncio.sleep(self.ttft)
        completion_id = f"chatcmpl-{record.request_id}"
        yield _chunk(completion_id, model, {"role": "assistant", "content": ""})
        words = reply.text.split(" ") if reply.text else []
        deltas = [{"content": w if i == 0 else " " + w} for i, w in enumerate(words)]
        deltas += _tool_call_deltas(reply.tool_name) if reply.tool_name else []
        for index, delta in enumerate(deltas):
            if index and self.token:
                await asyncio.sleep(self.token)
            if record.first_token_at is None:
                record.first_token_at = time.monotonic()
            yield _chunk(completion_id, model, delta)
        yield _chunk(completion_id, model, {}, "tool_calls" if reply.tool_name else "stop")
        yield b"data: [DONE]\n\n"


def build_app(ttft_ms: float = 0.0, token_ms: float = 0.0, embedding_dim: int = _EMBEDDING_DIM) -> FastAPI:
    """The server as an ASGI app, so a benchmark can also run it in-process."""
    state = LatencyModel(ttft_ms, token_ms)
    embeddings = HashedEmbeddings(embedding_dim)
    app = FastAPI(title="bench model server")
    app.state.model = state

    @app.post("/v1/chat/completions")
    async def complete(request: Request) -> StreamingResponse:
        body = await request.json()
        reply = choose_reply(body)
        record = state.record(body, reply)
        return StreamingResponse(
            state.chunks(reply, record, body.get("model", "bench")),
            media_type="text/event-stream",
            headers={"x-bench-request-id": record.request_id},
        )

    @app.post("/v1/embeddings")
    async def embed(request: Request) -> dict[str, Any]:
        return _embedding_body(embeddings, await request.json())

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": "bench", "object": "model", "owned_by": "bench"}]}

    @app.get("/bench/requests")
    async def requests(contains: str | None = None) -> dict[str, Any]:
        """Recorded requests, optionally only those whose last user message contains `contains`."""
        return {"clock": "monotonic", "requests": [asdict(r) for r in state.matching(contains)]}

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "OK"}

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8400)
    parser.add_argument("--ttft-ms", type=float, default=0.0, help="delay before the first byte of each reply")
    parser.add_argument("--token-ms", type=float, default=0.0, help="delay between content deltas")
    parser.add_argument("--embedding-dim", type=int, default=_EMBEDDING_DIM, help="length of /v1/embeddings vectors")
    args = parser.parse_args()
    app = build_app(args.ttft_ms, args.token_ms, args.embedding_dim)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
