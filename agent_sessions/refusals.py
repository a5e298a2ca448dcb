"""Why the session service refused a request, in terms any caller can answer: the API as a 4xx (or 503) in its
dialect's error shape, an automation delivery as a failed or skipped invocation."""

from __future__ import annotations


class SessionRefused(Exception):
    """A refusal: `status_code` as HTTP would say it, `param` names the request field to fix, `code` is
    machine-readable."""

    def __init__(self, status_code: int, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message
        self.param = param
        self.code = code


def invalid(message: str, param: str | None = None, code: str | None = None) -> SessionRefused:
    return SessionRefused(400, message, param, code)


def not_found(kind: str, identifier: str) -> SessionRefused:
    return SessionRefused(404, f"{kind} with id '{identifier}' not found.")
