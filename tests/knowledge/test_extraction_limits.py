"""What one file may make a worker hold is bounded: past the characters of text or a PDF's pages allowed, the
file is refused with a message naming the setting, never read whole nor cut short silently."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge.extraction import ExtractionLimits, Unreadable, extract
from tests.support.knowledge_files import pdf_with_text


def extract_text(path: Path, filename: str, limits: ExtractionLimits) -> str:
    return "".join(extract(path, filename, limits).blocks())


def test_text_past_the_character_limit_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "long.txt"
    path.write_text("puffin " * 1000)
    assert extract_text(path, "long.txt", ExtractionLimits(max_characters=7000)).startswith("puffin")
    with pytest.raises(Unreadable, match="DA_MAX_EXTRACTED_CHARACTERS"):
        extract_text(path, "long.txt", ExtractionLimits(max_characters=6999))
    with pytest.raises(Unreadable, match="DA_MAX_EXTRACTED_CHARACTERS"):  # refused by its size, unread
        extract_text(path, "long.txt", ExtractionLimits(max_characters=100))


def test_a_pdf_past_the_page_or_character_limit_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "charter.pdf"
    path.write_bytes(pdf_with_text(["Members row at dawn."] * 20))
    assert "row at dawn" in extract_text(path, "charter.pdf", ExtractionLimits())
    with pytest.raises(Unreadable, match="DA_MAX_PDF_PAGES"):
        extract_text(path, "charter.pdf", ExtractionLimits(max_pdf_pages=0))
    with pytest.raises(Unreadable, match="DA_MAX_EXTRACTED_CHARACTERS"):
        extract_text(path, "charter.pdf", ExtractionLimits(max_characters=50))
