"""The console's playground in a real browser (Debian's headless chromium, as test_console_browser.py): a person
picks a model, watches a reply stream in delta by delta, continues the conversation, attaches a vector store and
sees the file_search call as it happens, adds an MCP server and sees its call, defines a client tool and answers
its call inline until the response completes. A model's `<img onerror>` reply and tool arguments are shown as text
and run nothing; a request to the playground's endpoint without the console's CSRF token is refused and starts
nothing. With DA_CONSOLE_SCREENSHOTS set, the pages are saved there (docs/console.md)."""

from __future__ import annotations

import json
from typing import Any

from playwright.sync_api import Page, expect

from tests.inbox import test_console_browser as console_browser
from tests.inbox.test_console_browser import shot, sign_in
from tests.inbox.waiting import Tenant
from tests.support.knowledge_files import wait_for_file
from tests.support.scripted_model import ScriptedModel, ThreadedServer, text, tool_call
from tests.support.stack import SCRIPTED_MODEL

browser = console_browser.browser
page = console_browser.page
"""That module's fixtures: its chromium, and a page that fails the test if any script of the page ran an alert."""
XSS = "<img src=x onerror=alert(1)>"
STREAMED = "The tide turns twice a day at the harbour and the keeper writes it down"
WATCH_REPLY = """() => {
  window.seen = [];
  new MutationObserver(() => {
    const text = document.querySelector("#pg-transcript .turn.assistant:last-child .output-item.message .text");
    if (text && text.textContent) window.seen.push(text.textContent);
  }).observe(document.getElementById("pg-transcript"), {subtree: true, childList: true, characterData: true});
}"""
"""Records every text the page shows for the reply while it streams."""


def _key(tenant: Tenant) -> str:
    return tenant.http.headers["authorization"].removeprefix("Bearer ")


def _open(page: Page, tenant: Tenant) -> None:
    sign_in(page, _key(tenant))
    page.goto("/console/playground")
    page.get_by_label("Model").select_option(SCRIPTED_MODEL)


def _send(page: Page, message: str) -> None:
    page.get_by_label("Message").fill(message)
    page.get_by_role("button", name="Send").click()


def _replies(page: Page) -> Any:
    return page.locator("#pg-transcript .turn.assistant")


def test_a_reply_streams_in_delta_by_delta_and_the_next_message_continues_the_conversation(
    page: Page, tenants: tuple[Tenant, Tenant], model: ScriptedModel
) -> None:
    mine, _ = tenants
    _open(page, mine)
    model.script(text(STREAMED, token_delay_seconds=0.15), text(XSS))
    page.evaluate(WATCH_REPLY)
    _send(page, "When does the tide turn?")

    first = _replies(page).nth(0)
    expect(first.locator(".reply-status")).to_contain_text("completed", timeout=60_000)
    expect(first.locator(".message .text")).to_have_text(STREAMED)
    seen = [shown.strip() for shown in page.evaluate("window.seen")]  # the scripted model ends words with a space
    assert len(set(seen)) >= 3, f"the reply did not arrive in pieces: {seen}"
    assert all(STREAMED.startswith(shown) for shown in seen) and seen[-1] == STREAMED, seen
    first_id = first.locator(".reply-status").inner_text().split("· ")[-1]
    expect(page.locator("#pg-continues")).to_have_text(f"continues {first_id}")
    shot(page, "playground")

    _send(page, "And what does the keeper write?")
    second = _replies(page).nth(1)
    expect(second.locator(".reply-status")).to_contain_text("completed", timeout=60_000)
    expect(second.locator(".message .text")).to_have_text(XSS)  # the characters, never an element
    assert page.locator("main img").count() == 0
    second_id = second.locator(".reply-status").inner_text().split("· ")[-1]
    stored = mine.http.get(f"/v1/responses/{second_id}").json()
    assert stored["previous_response_id"] == first_id
    sent = model.requests[-1]["messages"]
    assert [m["content"].strip() for m in sent if m["role"] == "assistant"] == [STREAMED]  # the first exchange came


def test_file_search_shows_as_it_happens_and_a_client_tool_call_answered_inline_completes(
    page: Page, tenants: tuple[Tenant, Tenant], model: ScriptedModel, mcp: ThreadedServer
) -> None:
    mine, theirs = tenants
    log = mine.openai.files.create(file=("log.txt", b"The harbour log: the tide turns at six."), purpose="assistants")
    store = mine.openai.vector_stores.create(name="harbour", file_ids=[log.id])
    assert wait_for_file(mine.openai, store.id, log.id).status == "completed"
    foreign = theirs.openai.vector_stores.create(name="not yours")
    _open(page, mine)
    offered = page.get_by_label("Vector store (file_search)").locator("option")
    assert store.id in offered.evaluate_all("options => options.map(o => o.value)")
    assert foreign.id not in offered.evaluate_all("options => options.map(o => o.value)")  # the tenant's own only
    page.get_by_label("Vector store (file_search)").select_option(store.id)
    page.get_by_text("Client tool").click()
    page.get_by_label("Offer this tool").check()
    page.get_by_text("MCP server", exact=True).click()
    page.get_by_label("Server label").fill("calc")
    page.get_by_label("Server URL").fill(f"{mcp.allowed_url}/mcp")

    model.script(
        tool_call("file_search", {"query": "tide"}),
        tool_call("add_numbers", {"a": 4, "b": 5}),
        tool_call("get_weather", {"city": XSS}),
        text("Sunny at the harbour; the tide turns at six."),
    )
    _send(page, "Weather and tide?")
    reply = _replies(page).nth(0)
    search = reply.locator(".output-item.file_search_call")
    expect(search).to_contain_text("queries: tide", timeout=60_000)
    expect(search).to_contain_text("log.txt")
    expect(reply.locator(".output-item.mcp_list_tools")).to_contain_text("add_numbers")
    expect(reply.locator(".output-item.mcp_call")).to_contain_text("calc.add_numbers")
    expect(reply.locator(".output-item.mcp_call pre.arguments")).to_contain_text("→ 9")
    call = reply.locator(".output-item.function_call")
    expect(call).to_contain_text("get_weather")
    expect(call.locator("pre.arguments")).to_contain_text(XSS)  # the argument, as characters
    assert page.locator("main img").count() == 0
    waiting_id = reply.locator(".reply-status").inner_text().split("· ")[-1]
    assert [i["response_id"] for i in mine.inbox(kind="tool_output", limit=100)["data"]].count(waiting_id) == 1
    shot(page, "playground-tool")

    reply.get_by_label("Tool output").fill("sunny, 21 degrees")
    reply.get_by_role("button", name="Submit output").click()
    answered = _replies(page).nth(1)
    expect(answered.locator(".reply-status")).to_contain_text("completed", timeout=60_000)
    expect(answered.locator(".message .text")).to_have_text("Sunny at the harbour; the tide turns at six.")
    shot(page, "playground-answered")
    assert model.requests[-1]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": model.requests[-1]["messages"][-2]["tool_calls"][0]["id"],
        "content": "sunny, 21 degrees",
    }
    done_id = answered.locator(".reply-status").inner_text().split("· ")[-1]
    done = mine.http.get(f"/v1/responses/{done_id}").json()
    assert done["status"] == "completed" and done["previous_response_id"] == waiting_id
    assert waiting_id not in [i["response_id"] for i in mine.inbox(kind="tool_output", limit=100)["data"]]


def test_a_request_without_the_csrf_token_or_with_an_unknown_parameter_is_refused_and_starts_nothing(
    page: Page, tenants: tuple[Tenant, Tenant], model: ScriptedModel
) -> None:
    mine, _ = tenants
    _open(page, mine)
    token = page.locator('#playground input[name="csrf_token"]').input_value()
    turn = json.dumps({"model": SCRIPTED_MODEL, "input": "hello"})
    json_type = {"content-type": "application/json"}

    missing = page.request.post("/console/playground/responses", data=turn, headers=json_type)
    assert missing.status == 403 and "CSRF" in missing.json()["detail"]
    wrong = page.request.post(
        "/console/playground/responses", data=turn, headers={**json_type, "x-csrf-token": token + "x"}
    )
    assert wrong.status == 403
    unknown = json.dumps({"model": SCRIPTED_MODEL, "input": "hello", "tools": []})
    refused = page.request.post(
        "/console/playground/responses", data=unknown, headers={**json_type, "x-csrf-token": token}
    )
    assert refused.status == 400 and "tools" in refused.json()["detail"]
    assert model.requests == []  # nothing reached the model

    model.script(text("hello back"))
    page.locator('#playground input[name="csrf_token"]').evaluate("input => { input.value = ''; }")
    _send(page, "hello")  # the page's own script, without the token
    expect(page.get_by_role("alert")).to_contain_text("CSRF")
    assert model.requests == []
