"""Documents for the knowledge tests: a real PDF with a text layer, written from scratch, and helpers."""

from __future__ import annotations

import time

import openai
from openai.types.vector_stores import VectorStoreFile

WORDS = [  # the vocabulary of the large generated documents the ingestion tests feed
    "harbour",
    "seal",
    "puffin",
    "cliff",
    "herring",
    "tide",
    "lighthouse",
    "keeper",
    "ledger",
    "invoice",
    "glacier",
    "moraine",
]


def pdf_with_text(lines: list[str]) -> bytes:
    """A one-page PDF whose text layer holds `lines` (Helvetica), with a correct cross-reference table."""
    text = (
        "BT /F1 12 Tf 72 720 Td 14 TL "
        + " ".join("(" + line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ") '" for line in lines)
        + " ET"
    )
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(text) + text.encode("latin-1") + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def wait_for_file(client: openai.OpenAI, vector_store_id: str, file_id: str, seconds: float = 90) -> VectorStoreFile:
    """The vector store file once it is no longer in progress."""
    deadline = time.monotonic() + seconds
    while True:
        file = client.vector_stores.files.retrieve(file_id, vector_store_id=vector_store_id)
        if file.status != "in_progress" or time.monotonic() > deadline:
            return file
        time.sleep(0.2)
