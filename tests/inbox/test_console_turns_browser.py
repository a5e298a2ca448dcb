"""The turn pages in a real browser (Debian's headless chromium, as tests/inbox/test_console_browser.py drives it):
a person finds a finished turn in the sessions list and sees its steps as timeline bars with their texts, a
model reply `<img onerror>` shown as characters; and watches a running turn's tokens arrive before its page
turns into the finished timeline. With DA_CONSOLE_SCREENSHOTS set, the pages are saved there (docs/console.md)."""

from __future__ import annotations

import time

from playwright.sync_api import Page, expect

from tests.inbox.test_console_browser import XSS, browser, page, shot, sign_in  # noqa: F401 (fixtures)
from tests.inbox.waiting import Tenant, paused_llama_turn
from tests.support.scripted_model import ScriptedModel, text
from tests.support.stack import SCRIPTED_MODEL

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda omega"


def key_of(tenant: Tenant) -> str:
    return tenant.http.headers["authorization"].removeprefix("Bearer ")


def test_a_finished_turns_page_shows_its_steps_as_bars_with_their_texts_inert(
    page: Page,  # noqa: F811
    tenants: tuple[Tenant, Tenant],
    model: ScriptedModel,
) -> None:
    mine, _ = tenants
    paused = paused_llama_turn(mine, model)
    path = f"/v1/agents/{paused['agent_id']}/session/{paused['session_id']}/turn/{paused['turn_id']}"
    call = mine.http.get(path).json()["output_message"]["tool_calls"][0]
    time.sleep(2.0)  # the client takes its time: the tool's step, from its call to its output, shows it
    model.script(text(XSS))
    answer = {"call_id": call["call_id"], "tool_name": call["tool_name"], "content": "100 degrees"}
    resumed = mine.http.post(f"{path}/resume", json={"tool_responses": [answer], "stream": False})
    assert resumed.status_code == 200 and resumed.json()["status"] == "completed", resumed.text

    sign_in(page, key_of(mine))
    page.goto("/console/turns?view=sessions")
    page.locator(f'tr[data-id="{paused["session_id"]}"]').get_by_role("link", name=paused["turn_id"]).click()
    page.wait_for_url(f"**/console/turns/{paused['turn_id']}")

    steps = page.locator("ol.timeline > li.step")
    kinds = [name.split("kind-")[1].split()[0] for name in steps.evaluate_all("items => items.map(i => i.className)")]
    assert kinds == ["inference", "tool_execution", "inference"], kinds
    fills = page.locator("svg.bar rect.fill").evaluate_all("rects => rects.map(r => r.getAttribute('width'))")
    widths = [float(width) for width in fills]
    assert widths[1] == max(widths) and min(widths) > 0, widths  # where the time went: the wait
    expect(steps.nth(1).locator(".step-label")).to_contain_text("wait for the client's output")
    drawn = page.locator("svg.bar").first.bounding_box()
    assert drawn is not None and drawn["width"] > 500  # drawn across the page
    expect(steps.nth(0).locator(".step-output")).to_contain_text("get_boiling_point")
    expect(steps.nth(1).locator(".step-output")).to_contain_text("100 degrees")
    expect(steps.nth(2).locator(".step-output")).to_have_text(XSS)  # the reply, as characters
    expect(steps.nth(2)).to_contain_text("out tokens")
    assert page.locator("main img").count() == 0
    link = page.get_by_role("link", name="Workflow in the Temporal UI").get_attribute("href")
    assert link is not None and link.endswith(f"/namespaces/default/workflows/turn-{paused['turn_id']}")
    shot(page, "turn")


def test_a_running_turns_tokens_arrive_on_its_page_and_it_ends_as_a_timeline(
    page: Page,  # noqa: F811
    tenants: tuple[Tenant, Tenant],
    model: ScriptedModel,
) -> None:
    mine, _ = tenants
    model.script(text(WORDS, token_delay_seconds=0.5))
    response = mine.openai.responses.create(model=SCRIPTED_MODEL, input="count", background=True)
    sign_in(page, key_of(mine))
    page.goto("/console/turns?view=responses")
    shot(page, "turns")
    page.locator(f'tr[data-id="{response.id}"] a').click()
    live = page.locator("#live .live-text")
    expect(live).to_contain_text("alpha")
    assert "omega" not in live.inner_text()  # still arriving
    expect(live).to_contain_text("delta")
    shot(page, "turn-live")
    expect(page.locator(".timeline .step-output")).to_have_text(WORDS, timeout=30_000)  # reloaded once ended
    expect(page.locator("h1 + .meta .status")).to_have_text("completed")
    assert page.locator("#live").count() == 0
