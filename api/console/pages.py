"""The console's knowledge, webhooks and automations, and usage pages, mounted beside the inbox (console.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import Request
from starlette.responses import Response

from api.console import knowledge_page, usage_page, webhooks_page
from api.console.api_calls import ApiRefused
from api.console.routes import page, templates


def _epoch(seconds: int | None) -> str:
    """A Unix time as the pages show times: UTC, to the minute."""
    if seconds is None:
        return "—"
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M UTC")


async def _refused(request: Request, refused: Exception) -> Response:
    """What the API refused a page's read with (a form's refusals are shown on its page instead)."""
    status, message = (refused.status, refused.message) if isinstance(refused, ApiRefused) else (500, str(refused))
    return page(request, "refused.html", status, message=message)


def install_console_pages(app: Any) -> None:
    templates.filters["epoch"] = _epoch
    for pages in (knowledge_page, webhooks_page, usage_page):
        app.include_router(pages.router)
    app.add_exception_handler(ApiRefused, _refused)
