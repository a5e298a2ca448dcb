"""The session service's refusals (agent_sessions/refusals.py) answered in this dialect's error shape."""

from __future__ import annotations

from fastapi import Request, Response
from fastapi.exception_handlers import http_exception_handler

from agent_sessions.refusals import SessionRefused
from api.openai.errors import OpenAIError


async def answer_refusal(request: Request, refused: SessionRefused) -> Response:
    """The refusal as the OpenAIError a route of this dialect raises itself."""
    error = OpenAIError(refused.status_code, refused.message, refused.param, refused.code)
    return await http_exception_handler(request, error)
