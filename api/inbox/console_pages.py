"""The console's knowledge, webhooks and automations, and usage pages, mounted beside the inbox (console.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from api.inbox import console_knowledge, console_usage, console_webhooks
from api.inbox.console import templates


def _epoch(seconds: int | None) -> str:
    """A Unix time as the pages show times: UTC, to the minute."""
    if seconds is None:
        return "—"
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M UTC")


def install_console_pages(app: Any) -> None:
    templates.filters["epoch"] = _epoch
    for pages in (console_knowledge, console_webhooks, console_usage):
        app.include_router(pages.router)
