"""The knowledge, webhooks and automations, and usage pages in a real browser (Debian's headless chromium, as
tests/inbox/test_console_browser.py drives it): a file dropped on the knowledge page is uploaded, attached and
followed to `completed` on the page, a search shows ranked chunks with their scores; a webhook delivery is sent
again with Redeliver; an automation is paused and resumed; the usage chart shows a priced session's calls. With
DA_CONSOLE_SCREENSHOTS set, each page is saved as a screenshot there (docs/console.md)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.inbox import test_console_browser as in_browser
from tests.inbox.console_pages import (
    NOTES,
    endpoint_with_delivery,
    priced_session,
    vector_store,
    weekly_automation,
)
from tests.inbox.test_console_browser import SCREENSHOTS, XSS, shot, sign_in
from tests.inbox.waiting import Tenant
from tests.support.knowledge_files import WORDS
from tests.support.scripted_model import ScriptedModel
from tests.support.stack import PRICED_MODEL
from tests.support.webhook_receiver import Receiver

OTHER_WORDS = [word for word in WORDS if word not in NOTES.lower()]
FILLER = "\n\n".join(
    " ".join(OTHER_WORDS[(line + word) % len(OTHER_WORDS)] for word in range(40)) for line in range(400)
)
"""Enough text (none of it the searched words) that ingestion takes a moment, so the page shows it in progress
before it completes."""


browser, page = in_browser.browser, in_browser.page
"""The browser and its signed-out page, as the inbox's browser test has them."""


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver().start()
    yield running
    running.stop()


def _key(tenant: Tenant) -> str:
    return tenant.http.headers["authorization"].removeprefix("Bearer ")


def _drop(opened: Page, name: str, text: str) -> None:
    """Drop a file on the drop zone as a person dragging it from their desktop does."""
    opened.locator(".drop-zone").evaluate(
        """(zone, [name, text]) => {
            const files = new DataTransfer();
            files.items.add(new File([text], name, { type: "text/plain" }));
            zone.dispatchEvent(new DragEvent("dragover", { dataTransfer: files, bubbles: true, cancelable: true }));
            zone.dispatchEvent(new DragEvent("drop", { dataTransfer: files, bubbles: true, cancelable: true }));
        }""",
        [name, text],
    )


def test_a_dropped_file_is_ingested_before_the_persons_eyes_and_a_search_ranks_its_chunks(
    page: Page, tenants: tuple[Tenant, Tenant]
) -> None:
    mine, _ = tenants
    store_id = vector_store(mine, f"field notes {XSS}")
    sign_in(page, _key(mine))
    page.goto("/console/knowledge")
    expect(page.locator(f'li.store[data-store="{store_id}"] a.name')).to_have_text(f"field notes {XSS}")
    page.locator(f'li.store[data-store="{store_id}"] a.name').click()
    page.wait_for_url(f"**/console/knowledge/{store_id}")

    polled: list[str] = []
    page.on("request", lambda sent: polled.append(sent.url) if sent.url.endswith("/progress") else None)
    with page.expect_navigation():
        _drop(page, "notes.txt", f"{NOTES}\n\n{FILLER}")
    expect(page.get_by_role("status")).to_contain_text("is being ingested")
    row = page.locator("table.files tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("notes.txt")
    shown_first = row.locator('[data-field="file-status"]').inner_text()
    expect(row.locator('[data-field="file-status"]')).to_have_text("completed", timeout=60_000)
    expect(page.locator('[data-field="status"]')).to_have_text("completed")
    expect(page.locator('[data-field="counts"]')).to_have_text("1 of 1 files ingested")
    bar = page.locator("#store-progress")
    assert bar.get_attribute("max") == "1" and bar.evaluate("bar => bar.value") == 1
    if shown_first == "in progress":  # the page moved on by its own polling, never reloaded
        assert polled, "the page showed ingestion in progress but never asked how it went"
    shot(page, "knowledge")

    page.get_by_label("Query").fill("puffins on the cliff above the harbour")
    page.get_by_role("button", name="Search").click()
    results = page.locator("ol.results li.result")
    expect(results.first).to_be_visible()
    scores = [float(text.removeprefix("score ")) for text in results.locator(".score").all_inner_texts()]
    assert scores == sorted(scores, reverse=True) and all(0 < score <= 1 for score in scores), scores
    expect(results.first.locator("pre.chunk")).to_contain_text("Puffins nest on the cliff")
    expect(results.first.locator(".rank")).to_have_text("#1")
    assert page.locator("main img").count() == 0
    page.get_by_role("heading", name="Search").scroll_into_view_if_needed()
    if SCREENSHOTS is not None:  # the visible part only: the chunks below it are long
        page.screenshot(path=str(Path(SCREENSHOTS) / "knowledge-search.png"))


def test_a_delivery_is_sent_again_and_an_automation_paused_and_resumed_from_the_page(
    page: Page, tenants: tuple[Tenant, Tenant], model: ScriptedModel, receiver: Receiver
) -> None:
    mine, _ = tenants
    endpoint_id, delivery = endpoint_with_delivery(mine, model, receiver)
    automation = weekly_automation(mine, "weekly report")
    sign_in(page, _key(mine))
    page.goto("/console/webhooks")
    sent = page.locator(f'tr[data-delivery="{delivery["id"]}"]')
    expect(sent.locator('[data-field="delivery-status"]')).to_have_text("delivered")
    expect(sent.locator(".attempts")).to_contain_text("HTTP 200")
    expect(sent.locator('[data-field="redeliveries"]')).to_have_text("0")

    sent.get_by_role("button", name="Redeliver").click()
    expect(page.get_by_role("status")).to_contain_text("is being sent again")
    expect(sent.locator('[data-field="redeliveries"]')).to_have_text("1")
    second = receiver.wait_for(2)[1]
    assert second.headers["webhook-id"] == receiver.deliveries[0].headers["webhook-id"]  # the same event again

    scheduled = page.locator(f'tr[data-automation="{automation.id}"]')
    expect(scheduled.locator('[data-field="automation-status"]')).to_have_text("active")
    expect(scheduled.locator('[data-field="next-run"]')).to_have_text(re.compile(r"\d{4}-\d\d-\d\d 0[78]:00 UTC"))
    shot(page, "webhooks")
    scheduled.get_by_role("button", name="Pause").click()
    expect(page.get_by_role("status")).to_contain_text("is paused")
    expect(scheduled.locator('[data-field="automation-status"]')).to_have_text("paused")
    expect(scheduled.locator('[data-field="next-run"]')).to_have_text("—")
    assert mine.openai.beta.agents.automations.retrieve(automation.id).status == "paused"
    scheduled.get_by_role("button", name="Resume").click()
    expect(page.get_by_role("status")).to_contain_text("active again")
    expect(scheduled.locator('[data-field="automation-status"]')).to_have_text("active")
    expect(scheduled.locator('[data-field="next-run"]')).to_have_text(re.compile(r"UTC$"))
    assert mine.openai.beta.agents.automations.retrieve(automation.id).status == "active"

    mine.openai.beta.agents.automations.delete(automation.id)
    mine.http.delete(f"/v1/webhook_endpoints/{endpoint_id}")


def test_the_usage_chart_shows_a_priced_sessions_tokens_and_cost(
    page: Page, tenants: tuple[Tenant, Tenant], model: ScriptedModel
) -> None:
    mine, _ = tenants
    priced_session(mine, model, "Hello there, friend")
    sign_in(page, _key(mine))
    page.goto("/console/usage")
    tokens, cost = page.get_by_role("img", name="Tokens per day"), page.get_by_role("img", name="Cost per day")
    # The tenant's calls on the unpriced model (the other pages' tests) are tokens too, but cost nothing.
    priced = tokens.locator("rect.bar", has=page.locator("title", has_text=PRICED_MODEL))
    expect(priced).to_have_count(1)
    expect(cost.locator("rect.bar")).to_have_count(1)
    assert PRICED_MODEL in (cost.locator("rect.bar title").text_content() or "")
    assert float(cost.locator("rect.bar").get_attribute("height") or 0) > 100  # the day's bar is the tallest
    expect(page.locator("table.usage tbody")).to_contain_text(PRICED_MODEL)
    shot(page, "usage")
