"""Text cut into overlapping windows of tokens: OpenAI's static chunking strategy (800 tokens, 400 overlap).

Tokens are those of the built-in embedding model's tokenizer (a Llama-family BPE, close in size to OpenAI's);
each chunk is the exact slice of the text its tokens cover, so chunks quote the document as it is written.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_MAX_TOKENS = 800
DEFAULT_OVERLAP_TOKENS = 400
_SEGMENT_CHARS = 64_000
"""Text tokenized at a time: a 100 MB document never becomes one list of millions of token offsets, and the
thread that chunks lets go of the GIL often enough for its process's event loop (heartbeats, workflow tasks)."""


@dataclass(frozen=True)
class StaticChunking:
    max_chunk_size_tokens: int = DEFAULT_MAX_TOKENS
    chunk_overlap_tokens: int = DEFAULT_OVERLAP_TOKENS


@dataclass(frozen=True, eq=False)
class Chunk:
    text: str
    tokens: int
    token_ids: np.ndarray
    """Its tokens as the chunker cut them from the document: the built-in embedding model's input, so the
    document is not tokenized again to embed it."""


@cache
def _tokenizer() -> Any:
    import wordllama
    from tokenizers import Tokenizer

    return Tokenizer.from_file(
        str(Path(wordllama.__file__).parent / "tokenizers" / "l2_supercat_tokenizer_config.json")
    )


def count_tokens(text: str) -> int:
    return len(_tokenizer().encode(text, add_special_tokens=False).ids)


def token_ids(texts: list[str]) -> list[np.ndarray]:
    """Each text's token ids, tokenized on their own (the built-in embedding model's input)."""
    encodings = _tokenizer().encode_batch(texts, add_special_tokens=False)
    return [np.asarray(encoding.ids, np.int64) for encoding in encodings]


def _segments(blocks: Iterable[str]) -> Iterator[tuple[int, str]]:
    """The text `blocks` make, in segments of up to _SEGMENT_CHARS characters cut at the last space of their second
    half (if there is one and the text goes on), each with its offset in the text: cut as they would be from the
    whole text, holding no more of it than a segment and a block."""
    source = iter(blocks)
    text, position, offset = "", 0, 0
    more = True
    while True:
        while more and len(text) - position <= _SEGMENT_CHARS:
            block = next(source, None)
            if block is None:
                more = False
            else:
                text, position = text[position:] + block, 0
        if position == len(text):
            return
        end = min(len(text), position + _SEGMENT_CHARS)
        if end < len(text):
            cut = text.rfind(" ", position + _SEGMENT_CHARS // 2, end)
            end = cut if cut > position else end
        yield offset, text[position:end]
        offset += end - position
        position = end


def _spans(segment: str, offset: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Start and end character offsets (in the text the segment begins at `offset` of) and ids of the tokens of
    `segment` (empty tokens left out), as arrays: a document is millions of tokens, and a Python object per token
    cost more than tokenizing it."""
    encoding = _tokenizer().encode(segment, add_special_tokens=False)
    offsets = np.asarray(encoding.offsets, np.int64).reshape(-1, 2)
    kept = offsets[:, 1] > offsets[:, 0]
    offsets = offsets[kept] + offset
    return offsets[:, 0], offsets[:, 1], np.asarray(encoding.ids, np.int64)[kept]


def chunks(blocks: Iterable[str], strategy: StaticChunking) -> Generator[Chunk]:
    """Windows of `max_chunk_size_tokens` tokens of the text `blocks` make, each starting `max - overlap` tokens
    after the one before; the last holds the tokens that follow the last full window (if any do), with the
    overlap before them. Only the text from the first token not yet past every window it belongs to is held, so
    a document of any size is chunked in bounded memory."""
    size, overlap = strategy.max_chunk_size_tokens, strategy.chunk_overlap_tokens
    step = size - overlap
    starts = ends = ids = np.empty(0, np.int64)  # the tokens not yet past every window they belong to
    held, held_from = "", 0  # the text from `held_from` (the first of those tokens' start) on
    emitted = False
    for offset, segment in _segments(blocks):
        spans = _spans(segment, offset)
        starts, ends, ids = (np.concatenate(pair) for pair in zip((starts, ends, ids), spans, strict=True))
        held += segment
        if len(starts) >= size:
            windows = (len(starts) - size) // step + 1
            for first in range(0, windows * step, step):
                text = held[starts[first] - held_from : ends[first + size - 1] - held_from]
                yield Chunk(text, size, ids[first : first + size])
            starts, ends, ids = starts[windows * step :], ends[windows * step :], ids[windows * step :]
            emitted = True
        keep_from = int(starts[0]) if len(starts) else offset + len(segment)
        held, held_from = held[keep_from - held_from :], keep_from
    if len(starts) and (len(starts) > overlap or not emitted):
        yield Chunk(held[starts[0] - held_from : ends[-1] - held_from], len(starts), ids)


def most_chunks(characters: int, strategy: StaticChunking) -> int:
    """A bound on the chunks of a text of `characters` characters, known without tokenizing it: a character is at
    most four tokens (a UTF-8 byte each, by the tokenizer's byte fallback), and a segment's first character may
    gain a prefix token."""
    tokens = 4 * characters + characters // (_SEGMENT_CHARS // 2) + 1
    return tokens // (strategy.max_chunk_size_tokens - strategy.chunk_overlap_tokens) + 1
