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

DEFAULT_MAX_TOKENS = 800
DEFAULT_OVERLAP_TOKENS = 400
_SEGMENT_CHARS = 64_000
"""Text tokenized at a time: a 100 MB document never becomes one list of millions of token offsets, and the
thread that chunks lets go of the GIL often enough for its process's event loop (heartbeats, workflow tasks)."""


@dataclass(frozen=True)
class StaticChunking:
    max_chunk_size_tokens: int = DEFAULT_MAX_TOKENS
    chunk_overlap_tokens: int = DEFAULT_OVERLAP_TOKENS


@dataclass(frozen=True)
class Chunk:
    text: str
    tokens: int


@cache
def _tokenizer() -> Any:
    import wordllama
    from tokenizers import Tokenizer

    return Tokenizer.from_file(
        str(Path(wordllama.__file__).parent / "tokenizers" / "l2_supercat_tokenizer_config.json")
    )


def count_tokens(text: str) -> int:
    return len(_tokenizer().encode(text, add_special_tokens=False).ids)


def _spans(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) character offsets of every token of `text`, segment by segment (cut at whitespace)."""
    tokenizer = _tokenizer()
    start = 0
    while start < len(text):
        end = min(len(text), start + _SEGMENT_CHARS)
        if end < len(text):
            cut = text.rfind(" ", start + _SEGMENT_CHARS // 2, end)
            end = cut if cut > start else end
        for first, last in tokenizer.encode(text[start:end], add_special_tokens=False).offsets:
            if last > first:
                yield start + first, start + last
        start = end


def chunks(text: str, strategy: StaticChunking) -> Iterator[Chunk]:
    size, overlap = strategy.max_chunk_size_tokens, strategy.chunk_overlap_tokens
    step = size - overlap
    window: list[tuple[int, int]] = []
    emitted_to = 0  # tokens of `window` already ending a chunk
    for span in _spans(text):
        window.append(span)
        if len(window) == size:
            yield Chunk(text[window[0][0] : window[-1][1]], size)
            window = window[step:]
            emitted_to = len(window)
    if window and (len(window) > emitted_to or emitted_to == 0):
        yield Chunk(text[window[0][0] : window[-1][1]], len(window))
