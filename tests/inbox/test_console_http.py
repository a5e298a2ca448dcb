"""The console over plain HTTP, where no browser is needed: with no API keys it is open on loopback only, as the
API is; every page and file carries the security headers; a signed-out visitor of a keyed server is sent to
sign in, and cannot act."""

from __future__ import annotations

import httpx

from tests.inbox.waiting import Tenant
from tests.support.stack import Stack


def test_without_keys_the_console_is_open_on_loopback_only(http: httpx.Client, stack: Stack) -> None:
    inbox = http.get("/console/inbox")
    assert inbox.status_code == 200 and "<h1>Inbox</h1>" in inbox.text
    assert "frame-ancestors 'none'" in inbox.headers["content-security-policy"]
    assert inbox.headers["x-frame-options"] == "DENY"
    assert http.get("/console/sign-in", follow_redirects=False).headers["location"] == "/console/inbox"
    script = http.get("/console/static/console.js")
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
    assert http.get("/console/static/../app.py").status_code == 404

    foreign = http.get("/console/inbox", headers={"host": "console.example.com"})
    assert foreign.status_code == 403 and "console.example.com" in foreign.text


def test_a_signed_out_visitor_of_a_keyed_server_is_sent_to_sign_in_and_cannot_act(
    tenants: tuple[Tenant, Tenant],
) -> None:
    with httpx.Client(base_url=str(tenants[0].http.base_url)) as anonymous:
        page = anonymous.get("/console/inbox", follow_redirects=False)
        assert page.status_code == 303 and page.headers["location"] == "/console/sign-in"
        acted = anonymous.post("/console/inbox/any-turn", data={"action": "lift_limit"}, follow_redirects=False)
        assert acted.status_code == 303 and acted.headers["location"] == "/console/sign-in"
        anonymous.cookies.set("da_console_key", "not-a-key")
        assert anonymous.get("/console/inbox", follow_redirects=False).status_code == 303
