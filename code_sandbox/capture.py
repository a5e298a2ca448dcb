"""A call's stdout and stderr, kept up to the output limit; the rest is counted and dropped."""

from __future__ import annotations

import asyncio
import contextlib


class CappedOutput:
    """Bytes kept up to `limit`; what comes after is only counted, so a flood costs no memory."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.kept = bytearray()
        self.dropped = 0

    def add(self, data: bytes) -> None:
        room = max(0, self.limit - len(self.kept))
        self.kept += data[:room]
        self.dropped += max(0, len(data) - room)

    @property
    def truncated(self) -> bool:
        return self.dropped > 0

    def text(self) -> str:
        return self.kept.decode("utf-8", errors="replace")


async def read_all(stream: asyncio.StreamReader, output: CappedOutput) -> None:
    """Reads a one-shot command's stream to its end."""
    while data := await stream.read(65536):
        output.add(data)


class MarkedStream:
    """A kernel's stdout or stderr, read for as long as the kernel lives. A call's share starts when the call
    does (output between calls, from something the code left running, is dropped) and ends at the marker the
    kernel writes after the cell, so output still in the pipe is not lost or given to the next call."""

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self._stream = stream
        self._output: CappedOutput | None = None
        self._marker = b""
        self._tail = b""
        self._ended = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    def begin(self, limit: int, marker: bytes) -> CappedOutput:
        self._output, self._marker, self._tail = CappedOutput(limit), marker, b""
        self._ended = asyncio.Event()
        return self._output

    async def end(self, wait_seconds: float) -> None:
        """Waits (at most `wait_seconds`) for the marker or the stream's end; the call's output is then complete."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ended.wait(), wait_seconds)
        if self._output is not None and self._tail:
            self._output.add(self._tail)
        self._output = None

    async def _read(self) -> None:
        while data := await self._stream.read(65536):
            if self._output is None:
                continue
            buffer = self._tail + data
            found = buffer.find(self._marker)
            if found >= 0:
                self._output.add(buffer[:found])
                self._tail, self._output = b"", None
                self._ended.set()
                continue
            keep = min(len(buffer), len(self._marker) - 1)  # a marker may be split across two reads
            self._output.add(buffer[: len(buffer) - keep])
            self._tail = buffer[len(buffer) - keep :]
        self._ended.set()

    async def close(self) -> None:
        self._reader.cancel()
        await asyncio.gather(self._reader, return_exceptions=True)
