"""What keeps the console's pages safe in a browser: who is signed in (the key cookie), the CSRF token of every
form, and the headers that forbid inline script, framing and sniffing.

The key lives only in an HttpOnly, SameSite=Strict cookie scoped to /console: no script can read it and no other
site's page can send it. Every form carries a token that must equal a second cookie of the same kind (a
double-submit token), so a form posted from anywhere but a console page is refused even where SameSite is not
honoured.
"""

from __future__ import annotations

import base64
import hmac
import secrets
from typing import Any

from fastapi import Request
from starlette.responses import Response

from api.guards.auth import CONSOLE_KEY_COOKIE, CONSOLE_PATH
from api.guards.tenancy import Principal

CSRF_COOKIE = "da_console_csrf"
CSRF_FIELD = "csrf_token"
SESSION_SECONDS = 8 * 3600
"""How long a sign-in lasts: a working day, then the key is asked again."""

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # no-referrer would make the browser send `Origin: null` with forms
    "Cache-Control": "no-store",
}


class SignInNeeded(Exception):
    """The visitor has no valid key cookie, and the server requires keys."""


class CsrfRefused(Exception):
    """A form came without the console's CSRF token, or with another."""


def signed_in(request: Request) -> Principal:
    """The principal the key cookie names (set by the auth guard), or the one of an open server."""
    principal: Principal | None = request.scope.get("state", {}).get("principal")
    if principal is None:
        raise SignInNeeded
    return principal


def csrf_token(request: Request) -> str:
    """The visitor's CSRF token: the cookie's, or a new one that `secured` then sets."""
    token = request.cookies.get(CSRF_COOKIE)
    if not token:
        token = request.state.__dict__.setdefault("new_csrf", secrets.token_urlsafe(32))
    return token


def check_csrf(request: Request, form: Any) -> None:
    sent, kept = str(form.get(CSRF_FIELD) or ""), request.cookies.get(CSRF_COOKIE) or ""
    if not sent or not kept or not hmac.compare_digest(sent.encode(), kept.encode()):
        raise CsrfRefused


def _cookie(response: Response, request: Request, name: str, value: str, max_age: int | None) -> None:
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path=CONSOLE_PATH,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def secured(request: Request, response: Response) -> Response:
    """The response with the console's headers, and the CSRF cookie when the visitor had none."""
    response.headers.update(SECURITY_HEADERS)
    new = request.state.__dict__.get("new_csrf")
    if new:
        _cookie(response, request, CSRF_COOKIE, new, None)
    return response


def keep_key(request: Request, response: Response, key: str) -> None:
    _cookie(response, request, CONSOLE_KEY_COOKIE, key, SESSION_SECONDS)


def forget_key(response: Response) -> None:
    response.delete_cookie(CONSOLE_KEY_COOKIE, path=CONSOLE_PATH)


NOTICE_COOKIE = "da_console_notice"
NOTICE_CHARACTERS = 1_000
"""A notice is a line for a person; a long model answer is cut, and the cookie stays well under 4 KB."""


def keep_notice(request: Request, response: Response, notice: str) -> None:
    """What the next page shows once, after a form's redirect (post/redirect/get: a reload never posts again)."""
    value = base64.urlsafe_b64encode(notice[:NOTICE_CHARACTERS].encode()).decode()
    _cookie(response, request, NOTICE_COOKIE, value, 60)


def shown_notice(request: Request) -> str | None:
    """The notice a redirect left; the page that shows it forgets it (`forget_notice`)."""
    kept = request.cookies.get(NOTICE_COOKIE)
    if not kept:
        return None
    try:
        return base64.urlsafe_b64decode(kept.encode()).decode()
    except (ValueError, UnicodeDecodeError):
        return None


def forget_notice(response: Response) -> None:
    response.delete_cookie(NOTICE_COOKIE, path=CONSOLE_PATH)
