"""The API as the console's pages call it: each page reads and acts by sending, inside this process, the very
request an API client would send, with the signed-in visitor's own key, through the whole application (its
guards, quotas, limits and tenancy included). So a console page can show or do only what the visitor's key may
on the API, and nothing here repeats a check the API makes. The inbox's actions (actions.py) are sent the same way.
"""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import Request

from api.guards.auth import CONSOLE_KEY_COOKIE
from api.inbox.actions import FORWARDED_HEADERS


class ApiRefused(Exception):
    """The API refused the request: its status and the message it gave, shown to the person as is."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _message(answer: httpx.Response) -> str:
    try:
        body = answer.json()
    except ValueError:
        return answer.text or f"HTTP {answer.status_code}"
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(body.get("detail"), str):
            return str(body["detail"])
    return str(body)


def _headers(request: Request, keys_required: bool) -> dict[str, str]:
    sent = {name: value for name, value in request.headers.items() if name in FORWARDED_HEADERS}
    sent.pop("authorization", None)  # a console page's credentials are its cookie's, never a header
    key = request.cookies.get(CONSOLE_KEY_COOKIE)
    if key and keys_required:
        sent["authorization"] = f"Bearer {key}"
    return sent


async def call_api(
    request: Request, services: Any, method: str, path: str, extra_headers: dict[str, str] | None = None, **sent: Any
) -> Any:
    """The JSON the API answers to `method path` sent as the visitor; `sent` is httpx's (json=, params=,
    files=, data=). A 4xx or 5xx raises ApiRefused with the API's own message."""
    headers = _headers(request, bool(services.settings.key_entries())) | (extra_headers or {})
    transport = httpx.ASGITransport(app=request.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://console", timeout=None) as client:
        answer = await client.request(method, path, headers=headers, **sent)
    if answer.status_code >= 400:
        raise ApiRefused(answer.status_code, _message(answer))
    return answer.json() if answer.content else None
