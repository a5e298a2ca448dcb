"""A multipart upload read as it arrives: the file part streams into the blob store, the other fields are kept.

Starlette's form parsing would spool the file to a temporary file first and hand it over whole; here each piece
of the body goes to the blob writer as soon as it is parsed, so an upload costs one write and a few pieces of
memory however large it is. The per-file limit (DA_MAX_FILE_BYTES) is counted as the bytes arrive.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fastapi import Request
from python_multipart.multipart import MultipartParser, parse_options_header

from api.openai.errors import OpenAIError, invalid
from knowledge.blobs import BlobWriter

MAX_FIELD_BYTES = 64 * 1024
MAX_FIELDS = 32
"""Form fields besides the file an upload may carry (the Files API's are `purpose` and `expires_after[…]`)."""
MAX_FORM_BYTES = 256 * 1024
"""Bytes of all form fields and part headers together: past these limits an upload is refused (400), so a body
of endless small fields cannot make a process hold it."""


@dataclass
class Upload:
    fields: dict[str, str] = field(default_factory=dict)
    filename: str | None = None
    size: int = 0


class _Parts:
    """The parser's callbacks: what the current part is, and what it produced since the last look."""

    def __init__(self) -> None:
        self.header_field = bytearray()
        self.header_value = bytearray()
        self.headers: dict[str, bytes] = {}
        self.name: str | None = None
        self.filename: str | None = None
        self.file_data: list[bytes] = []
        self.field_data = bytearray()
        self.finished_fields: list[tuple[str, bytes]] = []
        self.file_parts = 0
        self.uploaded_name: str | None = None
        self.form_bytes = 0
        """Bytes of form fields and part headers so far."""

    def on_part_begin(self) -> None:
        self.headers, self.name, self.filename = {}, None, None
        self.field_data = bytearray()

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self.form_bytes += end - start
        if self.form_bytes <= MAX_FORM_BYTES:
            self.header_field += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self.form_bytes += end - start
        if self.form_bytes <= MAX_FORM_BYTES:
            self.header_value += data[start:end]

    def on_header_end(self) -> None:
        self.headers[bytes(self.header_field).decode("latin-1").lower()] = bytes(self.header_value)
        self.header_field, self.header_value = bytearray(), bytearray()

    def on_headers_finished(self) -> None:
        _, options = parse_options_header(self.headers.get("content-disposition", b""))
        self.name = options.get(b"name", b"").decode("utf-8", "replace")
        filename = options.get(b"filename")
        if filename is not None and self.name == "file":
            self.filename = filename.decode("utf-8", "replace")
            self.file_parts += 1
            self.uploaded_name = self.uploaded_name or self.filename

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        if self.filename is not None:
            if self.file_parts == 1:
                self.file_data.append(data[start:end])
        else:
            self.form_bytes += end - start
            if len(self.field_data) + end - start <= MAX_FIELD_BYTES:
                self.field_data += data[start:end]

    def on_part_end(self) -> None:
        if self.filename is None and self.name:
            self.finished_fields.append((self.name, bytes(self.field_data)))


async def receive_upload(request: Request, writer: BlobWriter, limit: int) -> Upload:
    """Parse the request's multipart body, writing its `file` part to `writer` (which the caller commits or
    aborts). Raises a 400 for a body that is not multipart or has no file, a 413 past `limit` bytes."""
    content_type, options = parse_options_header(request.headers.get("content-type", ""))
    boundary = options.get(b"boundary")
    if content_type != b"multipart/form-data" or not boundary:
        raise invalid("Upload the file as multipart/form-data with a 'file' part and a 'purpose' field.", "file")
    parts = _Parts()
    callbacks = {name: getattr(parts, name) for name in dir(_Parts) if name.startswith("on_")}
    parser = MultipartParser(boundary, callbacks)  # type: ignore[arg-type]
    upload = Upload()
    async for piece in request.stream():
        try:
            parser.write(piece)
        except Exception as malformed:  # the parser's errors have no common public base
            raise invalid(f"The multipart body is malformed: {malformed}", "file") from None
        if len(parts.finished_fields) > MAX_FIELDS or parts.form_bytes > MAX_FORM_BYTES:
            raise invalid(
                f"The upload carries more than {MAX_FIELDS} form fields or {MAX_FORM_BYTES} bytes of them; "
                "send the file with 'purpose' (and 'expires_after') only.",
                "file",
            )
        for data in parts.file_data:
            upload.size += len(data)
            if upload.size > limit:
                raise OpenAIError(
                    413,
                    f"The file is larger than this server's limit of {limit} bytes (DA_MAX_FILE_BYTES).",
                    "file",
                    "file_too_large",
                )
            await writer.write(data)
        parts.file_data.clear()
    parser.finalize()
    if parts.file_parts == 0:
        raise invalid("The upload has no 'file' part (a form field named 'file' with a filename).", "file")
    upload.filename = parts.uploaded_name or "upload"
    for name, value in parts.finished_fields:
        upload.fields[name] = value.decode("utf-8", "replace")
    return upload
