"""The console at `/console`: pages for people, served by the API process from this package's own templates
(templates/) and files (static/), with no build step and nothing fetched from elsewhere.

Server-rendered Jinja2 pages with autoescaping, so every model output, tool argument and name is shown as text;
forms that post back here and act through the same code as `POST /v1/inbox/{id}/actions`; one small script
(static/console.js) that only improves what already works without it. Signing in, CSRF tokens and the security
headers are guard.py's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape
from pydantic import ValidationError
from starlette.responses import Response

from api.console import guard as guard
from api.guards.auth import CONSOLE_KEY_COOKIE, match_key
from api.guards.tenancy import principals
from api.inbox.actions import ALREADY_ANSWERED, InboxAction, act
from api.inbox.routes import inbox_page
from api.services import ServicesDep

HERE = Path(__file__).parent
STATIC = {"console.js": "text/javascript", "console.css": "text/css", "playground.js": "text/javascript"}
STATIC |= {"turn_live.js": "text/javascript", "turns.css": "text/css"}  # the turn pages' own (turn_pages.py)
STATIC |= {"knowledge.js": "text/javascript"}  # the knowledge page's (console_pages.py)

router = APIRouter(prefix="/console", include_in_schema=False)
templates = Environment(
    loader=FileSystemLoader(HERE / "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
)


def _arguments(value: Any) -> str:
    """Tool arguments as indented JSON text (escaped by the template like everything else)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return str(value)
    return json.dumps(value, indent=2, ensure_ascii=False)


def _age(seconds: int) -> str:
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


templates.filters["arguments"] = _arguments
templates.filters["age"] = _age


def page(request: Request, name: str, status_code: int = 200, **context: Any) -> Response:
    html = templates.get_template(name).render(
        csrf_token=guard.csrf_token(request), csrf_field=guard.CSRF_FIELD, **context
    )
    return guard.secured(request, HTMLResponse(html, status_code=status_code))


def _keys_required(services: Any) -> bool:
    return bool(services.settings.key_entries())


@router.get("")
async def console_root() -> Response:
    return RedirectResponse("/console/inbox", status_code=303)


@router.get("/static/{name}")
async def static_file(name: str) -> Response:
    if name not in STATIC:
        raise HTTPException(404, f"No console file {name!r}")
    response = FileResponse(HERE / "static" / name, media_type=STATIC[name])
    response.headers.update(guard.SECURITY_HEADERS)
    return response


@router.get("/sign-in")
async def sign_in_page(request: Request, services: ServicesDep) -> Response:
    if not _keys_required(services):
        return RedirectResponse("/console/inbox", status_code=303)
    return page(request, "sign_in.html")


@router.post("/sign-in")
async def sign_in(request: Request, services: ServicesDep) -> Response:
    form = await request.form()
    guard.check_csrf(request, form)
    key = str(form.get("api_key") or "").strip()
    known = principals(services.settings.key_entries()).items()
    if not key or match_key(known, key) is None:
        return page(request, "sign_in.html", 401, error="That API key is not accepted by this server.")
    response = guard.secured(request, RedirectResponse("/console/inbox", status_code=303))
    guard.keep_key(request, response, key)
    return response


@router.post("/sign-out")
async def sign_out(request: Request) -> Response:
    guard.check_csrf(request, await request.form())
    response = guard.secured(request, RedirectResponse("/console/sign-in", status_code=303))
    guard.forget_key(response)
    return response


@router.get("/inbox")
async def inbox(request: Request, services: ServicesDep, after: str | None = None) -> Response:
    principal = guard.signed_in(request)
    shown = await inbox_page(services, principal.tenant, after=after, limit=50)
    notice = guard.shown_notice(request)
    shown_page = page(
        request, "inbox.html", inbox=shown, tenant=principal.tenant, signed_in=_keys_required(services), notice=notice
    )
    if notice is not None:
        guard.forget_notice(shown_page)
    return shown_page


@router.get("/inbox/{turn_id}")
async def acted_item(turn_id: str) -> Response:
    """The address a form posted to, opened again (a bookmark, a shared link): the inbox."""
    return RedirectResponse("/console/inbox", status_code=303)


def _action_of(form: Any) -> InboxAction:
    """The action a console form asks for, in the shape `POST /v1/inbox/{id}/actions` takes."""
    outputs = {name.removeprefix("output:"): str(value) for name, value in form.items() if name.startswith("output:")}
    limit = str(form.get("limit") or "").strip()
    return InboxAction.model_validate(
        {
            "action": form.get("action"),
            "outputs": outputs or None,
            "approval_request_id": form.get("approval_request_id") or None,
            "reason": str(form.get("reason") or "").strip() or None,
            "limit": int(limit) if limit.isdigit() else None,
        }
    )


def _outcome(result: Any) -> str:
    """What the person is told once the turn took the answer: a llama-stack turn comes back finished."""
    answer = result.result if isinstance(result.result, dict) else {}
    if answer.get("status") == "completed" and isinstance(answer.get("output_message"), dict):
        return f"The turn completed: {answer['output_message'].get('content', '')}"
    return "Sent: the turn goes on."


@router.post("/inbox/{turn_id}")
async def act_from_console(request: Request, services: ServicesDep, turn_id: str) -> Response:
    principal = guard.signed_in(request)
    form = await request.form()
    guard.check_csrf(request, form)
    headers = {name: value for name, value in request.headers.items() if name in ("host", "origin")}
    key = request.cookies.get(CONSOLE_KEY_COOKIE)
    if key and _keys_required(services):
        headers["authorization"] = f"Bearer {key}"
    try:
        result = await act(request, services, principal.tenant, turn_id, _action_of(form), headers)
    except ValidationError as invalid:
        status, error = 400, "; ".join(str(problem["msg"]) for problem in invalid.errors())
    except HTTPException as refused:
        status = refused.status_code
        already = str(refused.detail).startswith(ALREADY_ANSWERED)
        error = "This item was already answered." if already else f"Not taken: {refused.detail}"
    else:
        # Post/redirect/get: the address bar shows the inbox, and a reload does not post the answer again.
        done = guard.secured(request, RedirectResponse("/console/inbox", status_code=303))
        guard.keep_notice(request, done, _outcome(result))
        return done
    shown = await inbox_page(services, principal.tenant, limit=50)
    return page(
        request,
        "inbox.html",
        status,
        inbox=shown,
        tenant=principal.tenant,
        signed_in=_keys_required(services),
        error=error,
    )


def install_console(app: Any) -> None:
    """Mount the console and answer its refusals as pages: sign in first; a form without its token."""
    app.include_router(router)

    async def to_sign_in(request: Request, _: Exception) -> Response:
        return guard.secured(request, RedirectResponse("/console/sign-in", status_code=303))

    async def refuse_form(request: Request, _: Exception) -> Response:
        text = "This form is missing its security token (CSRF), or it is stale: reload the page and try again."
        return page(request, "refused.html", 403, message=text)

    app.add_exception_handler(guard.SignInNeeded, to_sign_in)
    app.add_exception_handler(guard.CsrfRefused, refuse_form)
