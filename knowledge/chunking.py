"""Text cut into overlapping windows of tokens: OpenAI's static chunking strategy (800 tokens, 400 overlap).

Tokens are those of the built-in embedding model's tokenizer (a Llama-family BPE, close in size to OpenAI's);
each chunk is the exact slice of the text its tokens cover, so chunks quote the document as it is written.
"""

from __future__ import annotations

from collections.abc import Iterator
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


def _spans(text: str) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Start and end character offsets and ids of the tokens of `text` (empty tokens left out), one segment at a time
    (cut at whitespace), as arrays: a document is millions of tokens, and a Python object per token cost more
    than tokenizing it."""
    tokenizer = _tokenizer()
    start = 0
    while start < len(text):
        end = min(len(text), start + _SEGMENT_CHARS)
        if end < len(text):
            cut = text.rfind(" ", start + _SEGMENT_CHARS // 2, end)
            end = cut if cut > start else end
        encoding = tokenizer.encode(text[start:end], add_special_tokens=False)
        offsets = np.asarray(encoding.offsets, np.int64).reshape(-1, 2)
        kept = offsets[:, 1] > offsets[:, 0]
        offsets = offsets[kept] + start
        yield offsets[:, 0], offsets[:, 1], np.asarray(encoding.ids, np.int64)[kept]
        start = end


def chunks(text: str, strategy: StaticChunking) -> Iterator[Chunk]:
    """Windows of `max_chunk_size_tokens` tokens, each starting `max - overlap` tokens after the one before; the
    last holds the tokens that follow the last full window (if any do), with the overlap before them."""
    size, overlap = strategy.max_chunk_size_tokens, strategy.chunk_overlap_tokens
    step = size - overlap
    starts = ends = ids = np.empty(0, np.int64)  # the tokens not yet past every window they belong to
    emitted = False
    for segment in _spans(text):
        starts, ends, ids = (np.concatenate(pair) for pair in zip((starts, ends, ids), segment, strict=True))
        if len(starts) < size:
            continue
        windows = (len(starts) - size) // step + 1
        for first in range(0, windows * step, step):
            yield Chunk(text[starts[first] : ends[first + size - 1]], size, ids[first : first + size])
        starts, ends, ids = starts[windows * step :], ends[windows * step :], ids[windows * step :]
        emitted = True
    if len(starts) and (len(starts) > overlap or not emitted):
        yield Chunk(text[starts[0] : ends[-1]], len(starts), ids)
