"""The console in a real browser: Debian's headless chromium driven by Playwright's Python package (never a
downloaded browser). A person signs in with an API key, finds a paused turn in the inbox, submits its tool output
and sees the turn complete; approves one MCP call and rejects another with a reason; a model's `<img onerror>`
reply and tool arguments are shown as text and run nothing; a second submit is told it was already answered; a
form without its CSRF token is refused. With DA_CONSOLE_SCREENSHOTS set, each page is saved as a screenshot there
(docs/console.md)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Dialog, Page, expect, sync_playwright

from tests.inbox.test_inbox_actions import completed_response
from tests.inbox.waiting import Tenant, approval_response, paused_llama_turn
from tests.support.scripted_model import ScriptedModel, ThreadedServer, text, tool_call

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = os.environ.get("DA_CONSOLE_SCREENSHOTS")
"""Where to save a screenshot of each page (docs/console.md refreshes docs/console/ so); unset: none is saved, so a
test run leaves the docs as they are."""
XSS = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if shutil.which(CHROMIUM) is None:
        missing = f"{CHROMIUM} is missing: `make browser` installs it (apt-get install chromium, as root)"
        if os.environ.get("CI"):
            pytest.fail(missing)  # CI must run the browser tests, never skip them
        pytest.skip(missing)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser, tenants: tuple[Tenant, Tenant]) -> Iterator[Page]:
    context = browser.new_context(
        base_url=str(tenants[0].http.base_url).rstrip("/"), viewport={"width": 1100, "height": 900}
    )
    opened = context.new_page()
    dialogs: list[str] = []

    def seen(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    opened.on("dialog", seen)
    yield opened
    context.close()
    assert dialogs == [], f"a page ran script: {dialogs}"  # an alert() from model output would land here


def shot(page: Page, name: str) -> None:
    if SCREENSHOTS is None:
        return
    Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(Path(SCREENSHOTS) / f"{name}.png"), full_page=True)


def sign_in(page: Page, key: str) -> None:
    page.goto("/console")
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()


def item(page: Page, turn_id: str) -> Any:
    return page.locator(f'li.item[data-turn="{turn_id}"]')


def test_a_person_signs_in_answers_a_paused_turn_and_sees_it_complete_with_model_text_shown_inert(
    page: Page, tenants: tuple[Tenant, Tenant], model: ScriptedModel
) -> None:
    mine, _ = tenants
    key = mine.http.headers["authorization"].removeprefix("Bearer ")
    first = page.goto("/console/inbox")
    assert first is not None and page.url.endswith("/console/sign-in")
    headers = first.all_headers()
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert (
        "script-src 'self'" in headers["content-security-policy"]
        and "unsafe-inline" not in headers["content-security-policy"]
    )
    shot(page, "sign-in")
    page.get_by_label("API key").fill("not-a-key")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("not accepted")
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/console/inbox")
    cookies = {cookie["name"]: cookie for cookie in page.context.cookies()}
    assert cookies["da_console_key"]["httpOnly"] and cookies["da_console_key"]["sameSite"] == "Strict"
    assert key not in page.url and page.evaluate("document.cookie") == ""  # no script can read the key

    model.script(tool_call("get_boiling_point", {"liquid_name": XSS}))
    paused = paused_llama_turn(mine, model, script=False)
    model.script(text(XSS))
    page.reload()
    waiting = item(page, paused["turn_id"])
    expect(waiting.locator("pre.arguments")).to_contain_text(XSS)  # the argument, as characters
    shot(page, "inbox")
    waiting.get_by_label("Tool output").fill("100 degrees")
    waiting.get_by_role("button", name="Submit").click()

    notice = page.get_by_role("status")
    expect(notice).to_have_text(f"The turn completed: {XSS}")
    assert page.locator("main img").count() == 0  # shown as text, never made an element
    shot(page, "answered")
    # Post/redirect/get: the address is the inbox's, and a reload neither posts again nor repeats the notice.
    assert page.url.endswith("/console/inbox")
    page.reload()
    expect(page.get_by_role("status")).to_have_count(0)
    turn = mine.http.get(
        f"/v1/agents/{paused['agent_id']}/session/{paused['session_id']}/turn/{paused['turn_id']}"
    ).json()
    assert turn["status"] == "completed"
    assert model.requests[-1]["messages"][-1]["content"] == "100 degrees"


def test_approve_and_reject_mcp_calls_and_a_second_submit_or_a_form_without_its_token_is_refused(
    page: Page, tenants: tuple[Tenant, Tenant], model: ScriptedModel, mcp: ThreadedServer
) -> None:
    mine, _ = tenants
    sign_in(page, mine.http.headers["authorization"].removeprefix("Bearer "))
    approved = approval_response(mine, model, mcp)
    rejected = approval_response(mine, model, mcp)
    turns = {i["response_id"]: i["id"] for i in mine.inbox(kind="approval", limit=100)["data"]}
    page.goto("/console/inbox")
    shot(page, "approvals")

    model.script(text("4 + 5 = 9"))
    to_approve = item(page, turns[approved.id])
    token = to_approve.locator('input[name="csrf_token"]').first.input_value()
    request_id = to_approve.locator('input[name="approval_request_id"]').input_value()
    to_approve.get_by_role("button", name="Approve").click()
    expect(page.get_by_role("status")).to_contain_text("goes on")
    done = completed_response(mine, _latest_response(mine, approved.id))
    assert [call.output for call in done.output if call.type == "mcp_call"] == ["9"]

    again = page.request.post(
        f"/console/inbox/{turns[approved.id]}",
        form={"csrf_token": token, "action": "approve", "approval_request_id": request_id},
    )
    assert again.status == 409 and "already answered" in again.text()

    model.script(text("I may not add them."))
    to_reject = item(page, turns[rejected.id])
    to_reject.get_by_label("Reason (optional)").fill("numbers are confidential")
    to_reject.get_by_role("button", name="Reject").click()
    expect(page.get_by_role("status")).to_contain_text("goes on")
    done = completed_response(mine, _latest_response(mine, rejected.id))
    assert not [call for call in done.output if call.type == "mcp_call" and call.output == "9"]
    assert "numbers are confidential" in str(model.requests[-1]["messages"])

    paused = paused_llama_turn(mine, model)
    page.goto("/console/inbox")
    waiting = item(page, paused["turn_id"])
    waiting.locator('input[name="csrf_token"]').evaluate("input => input.remove()")
    waiting.get_by_label("Tool output").fill("42")
    waiting.get_by_role("button", name="Submit").click()
    expect(page.get_by_role("alert")).to_contain_text("CSRF")
    shot(page, "csrf-refused")
    assert [i["id"] for i in mine.inbox(limit=100)["data"] if i["id"] == paused["turn_id"]]  # still waiting


def _latest_response(tenant: Tenant, first_id: str) -> str:
    """The continuation of `first_id` that the console made: the response whose previous_response_id it is."""
    for response in tenant.http.get("/v1/responses", params={"limit": 100}).json()["data"]:
        if response.get("previous_response_id") == first_id:
            return str(response["id"])
    raise AssertionError(f"no continuation of {first_id}")
