"""A file's text, by its kind: plain text, Markdown, HTML, JSON or PDF.

What cannot be read becomes `Unreadable` with a message that says what is wrong with the file and what to do,
which ingestion records as the file's `last_error`: an empty file, a PDF that is corrupt or has no text layer,
bytes that are no text in any encoding we read.
"""

from __future__ import annotations

import codecs
import html.parser
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Literal, NoReturn

ErrorCode = Literal["invalid_file", "unsupported_file"]

TEXT_SUFFIXES = {
    ".txt",
    ".md",
    ".markdown",
    ".rst",
    ".csv",
    ".tsv",
    ".log",
    ".py",
    ".js",
    ".ts",
    ".java",
    ".c",
    ".cpp",
    ".h",
    ".go",
    ".rs",
    ".rb",
    ".php",
    ".sh",
    ".css",
    ".tex",
    ".yaml",
    ".yml",
    ".toml",
    ".xml",
}
_MOSTLY_TEXT = 0.95
"""Share of printable characters below which decoded bytes are taken for binary data, not text."""
_SAMPLE = 65_536
"""The bytes (and then characters) at the head of a file that tell whether it is text."""
_BLOCK_BYTES = 1 << 16
"""A text file is decoded this much at a time."""


@dataclass(frozen=True)
class ExtractionLimits:
    """What one file may make a worker hold: its text, and a PDF's pages (DA_MAX_EXTRACTED_CHARACTERS,
    DA_MAX_PDF_PAGES). Past either the file fails with a message naming the setting; it is never cut short
    silently."""

    max_characters: int = 20_000_000
    max_pdf_pages: int = 2_000


class Unreadable(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class ExtractedText:
    """A file's text, checked whole before any of it is handed out (its encoding, its length, that there is text
    in it), so that a file fails before a chunk of it is written; then read out in blocks, as often as needed.
    A plain text file is read from disk block by block each time, so what a worker holds does not grow with the
    file; HTML, JSON and PDF text is held whole (within DA_MAX_EXTRACTED_CHARACTERS)."""

    characters: int
    blocks: Callable[[], Iterator[str]]


def extract(path: Path, filename: str, limits: ExtractionLimits) -> ExtractedText:
    """The text of the file at `path`, read by the kind its `filename` and its first bytes say it is."""
    size = path.stat().st_size
    if size == 0:
        raise Unreadable("invalid_file", f"{filename} is empty (0 bytes): upload a file with text in it.")
    with path.open("rb") as source:
        head = source.read(1024)
    suffix = Path(filename).suffix.lower()
    if head.startswith(b"%PDF") or suffix == ".pdf":
        return _whole(_pdf(path, filename, limits), filename, limits)
    if size > 4 * limits.max_characters:  # four bytes are the most one character takes in UTF-8
        _too_long(filename, limits)
    scan = _scan(path, filename)
    if suffix in (".html", ".htm") or scan.opening.lower().startswith(("<!doctype html", "<html")):
        return _whole(_html("".join(_decoded_blocks(path, scan.encoding))), filename, limits)
    if suffix == ".json":
        return _whole(_json("".join(_decoded_blocks(path, scan.encoding)), filename), filename, limits)
    if scan.characters > limits.max_characters:
        _too_long(filename, limits)
    if not scan.has_text:
        _no_text(filename)
    return ExtractedText(scan.characters, partial(_decoded_blocks, path, scan.encoding))


def _whole(text: str, filename: str, limits: ExtractionLimits) -> ExtractedText:
    if len(text) > limits.max_characters:
        _too_long(filename, limits)
    if not text.strip():
        _no_text(filename)
    return ExtractedText(len(text), lambda: iter((text,)))


def _too_long(filename: str, limits: ExtractionLimits) -> NoReturn:
    raise Unreadable(
        "invalid_file",
        f"{filename} holds more than {limits.max_characters} characters of text, this server's limit per file "
        "(DA_MAX_EXTRACTED_CHARACTERS): split it into smaller files.",
    )


def _no_text(filename: str) -> NoReturn:
    raise Unreadable("invalid_file", f"{filename} has no text to index (only whitespace or markup).")


@dataclass(frozen=True)
class _Scan:
    encoding: str
    characters: int
    has_text: bool
    """Whether any of the text is not whitespace."""
    opening: str
    """The first characters after any leading whitespace (enough to tell HTML)."""


def _decoded_blocks(path: Path, encoding: str) -> Iterator[str]:
    """The file's text in `encoding`, a block at a time (what `bytes.decode` would make of the whole file)."""
    decoder = codecs.getincrementaldecoder(encoding)()
    with path.open("rb") as source:
        while block := source.read(_BLOCK_BYTES):
            if text := decoder.decode(block):
                yield text
    if rest := decoder.decode(b"", final=True):
        yield rest


def _scan(path: Path, filename: str) -> _Scan:
    """The file read through once without being kept: the first encoding it decodes in whole (UTF-8, or UTF-16
    after its byte order mark, else Latin-1, which decodes anything), what that text is like, and whether its
    first 64 KiB look like binary data rather than text."""
    with path.open("rb") as source:
        first = source.read(_SAMPLE)
    utf16 = first[:2] in (b"\xff\xfe", b"\xfe\xff")
    for encoding in ("utf-8-sig", "utf-16", "latin-1") if utf16 else ("utf-8-sig", "latin-1"):
        characters, has_text, opening, sample = 0, False, "", ""
        try:
            for text in _decoded_blocks(path, encoding):
                characters += len(text)
                has_text = has_text or not text.isspace()
                if len(opening) < 15:
                    opening += text if opening else text.lstrip()
                if len(sample) < _SAMPLE:
                    sample += text[: _SAMPLE - len(sample)]
        except UnicodeDecodeError:
            continue
        break
    printable = sum(1 for character in sample if character.isprintable() or character in "\n\r\t\f")
    if (b"\x00" in first and not utf16) or (sample and printable / len(sample) < _MOSTLY_TEXT):
        raise Unreadable(
            "unsupported_file",
            f"{filename} looks like binary data, not text: upload plain text, Markdown, HTML, JSON or a PDF.",
        )
    return _Scan(encoding, characters, has_text, opening[:15])


class _TextOfHTML(html.parser.HTMLParser):
    _SKIPPED = frozenset({"script", "style", "noscript", "template", "head"})
    _BLOCKS = frozenset({"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article", "pre"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag in self._SKIPPED:
            self._skipping += 1
        elif tag in self._BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIPPED and self._skipping:
            self._skipping -= 1
        elif tag in self._BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def _html(raw: str) -> str:
    parser = _TextOfHTML()
    parser.feed(raw)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return "\n".join(line for line in lines if line)


def _json(raw: str, filename: str) -> str:
    try:
        json.loads(raw)
    except ValueError as exc:
        raise Unreadable(
            "invalid_file", f"{filename} is not valid JSON ({exc}): fix it or upload it as .txt."
        ) from None
    return raw


def _pdf(path: Path, filename: str, limits: ExtractionLimits) -> str:
    import pypdf
    from pypdf.errors import PyPdfError

    try:
        reader = pypdf.PdfReader(path)
        if reader.is_encrypted:
            raise Unreadable("unsupported_file", f"{filename} is an encrypted PDF: upload it without a password.")
        if len(reader.pages) > limits.max_pdf_pages:
            raise Unreadable(
                "unsupported_file",
                f"{filename} has {len(reader.pages)} pages, more than this server's limit of {limits.max_pdf_pages} "
                "(DA_MAX_PDF_PAGES): split it into smaller PDFs.",
            )
        pages = []
        characters = 0
        for page in reader.pages:
            pages.append(page.extract_text() or "")
            characters += len(pages[-1]) + 2
            if characters > limits.max_characters:
                _too_long(filename, limits)
    except Unreadable:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
        raise Unreadable(
            "invalid_file", f"{filename} is not a readable PDF ({type(exc).__name__}: {exc}); upload an intact copy."
        ) from None
    text = "\n\n".join(page for page in pages if page.strip())
    if not text.strip():
        raise Unreadable(
            "unsupported_file",
            f"{filename} has no text layer (a scanned PDF?): run OCR on it first, or upload its text.",
        )
    return text
