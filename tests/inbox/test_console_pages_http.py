"""The knowledge, webhooks and automations, and usage pages over plain HTTP: each shows its own tenant's objects
only, another tenant's are a 404 from every form, a form without its CSRF token is refused and changes nothing,
and an upload is the API's upload (its file attached and ingested, or taken back when the attachment is refused)."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator

import pytest

from tests.inbox.console_pages import (
    NOTES,
    console,
    endpoint_with_delivery,
    priced_session,
    store_files,
    vector_store,
    wait_ingested,
    weekly_automation,
)
from tests.inbox.waiting import Tenant
from tests.support.rest import final_turn
from tests.support.scripted_model import ScriptedModel, text
from tests.support.stack import PRICED_MODEL, SCRIPTED_MODEL, Stack
from tests.support.webhook_receiver import Receiver


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver().start()
    yield running
    running.stop()


def test_knowledge_upload_attaches_and_ingests_search_ranks_and_another_tenant_sees_nothing(
    tenants: tuple[Tenant, Tenant],
) -> None:
    mine, theirs = tenants
    store_id = vector_store(mine, "field notes")
    with console(mine) as me, console(theirs) as them:
        listing = me.get("/console/knowledge")
        assert listing.status_code == 200 and "field notes" in listing.text and store_id in listing.text
        assert "unsafe-inline" not in listing.headers["content-security-policy"]

        unsigned = me.post(
            "/console/knowledge/upload",
            data={"vector_store_id": store_id},
            files={"file": ("notes.txt", NOTES.encode(), "text/plain")},
        )
        assert unsigned.status_code == 403 and "CSRF" in unsigned.text
        assert store_files(mine, store_id) == []

        uploaded = me.post(
            "/console/knowledge/upload",
            data={"csrf_token": me.csrf, "vector_store_id": store_id},  # type: ignore[attr-defined]
            files={"file": ("notes.txt", NOTES.encode(), "text/plain")},
        )
        assert uploaded.status_code == 303, uploaded.text
        assert uploaded.headers["location"].startswith(f"/console/knowledge/{store_id}?uploaded=file-")
        (attached,) = store_files(mine, store_id)
        assert mine.http.get(f"/v1/files/{attached['id']}").json()["filename"] == "notes.txt"
        assert wait_ingested(mine, store_id)["file_counts"]["completed"] == 1

        shown = me.get(f"/console/knowledge/{store_id}")
        assert "notes.txt" in shown.text and 'data-field="file-status">completed' in shown.text
        progress = me.get(f"/console/knowledge/{store_id}/progress").json()
        assert progress["status"] == "completed" and progress["files"] == [
            {"id": attached["id"], "status": "completed", "last_error": None}
        ]
        found = me.get(f"/console/knowledge/{store_id}", params={"q": "puffins on the cliff"})
        scores = [float(score) for score in re.findall(r'class="score">score ([0-9.]+)<', found.text)]
        assert scores and scores == sorted(scores, reverse=True), found.text
        assert "Puffins nest on the cliff" in found.text

        assert store_id not in them.get("/console/knowledge").text
        assert them.get(f"/console/knowledge/{store_id}").status_code == 404
        assert them.get(f"/console/knowledge/{store_id}/progress").status_code == 404
        files_before = theirs.http.get("/v1/files").json()["data"]
        foreign = them.post(
            "/console/knowledge/upload",
            data={"csrf_token": them.csrf, "vector_store_id": store_id},  # type: ignore[attr-defined]
            files={"file": ("mine.txt", b"theirs", "text/plain")},
        )
        assert foreign.status_code == 404 and "not found" in foreign.text
        assert theirs.http.get("/v1/files").json()["data"] == files_before  # the upload was taken back
        assert len(store_files(mine, store_id)) == 1

        # Larger than a JSON request may be (DA_MAX_REQUEST_BYTES, 1 MiB): an upload has the file limit, as on
        # the API. Not a document the server can read, so its ingestion fails, and the page says why.
        large = me.post(
            "/console/knowledge/upload",
            data={"csrf_token": me.csrf, "vector_store_id": store_id},  # type: ignore[attr-defined]
            files={"file": ("large.bin", os.urandom(3 * 1024 * 1024 // 2), "application/octet-stream")},
        )
        assert large.status_code == 303, large.text
        assert wait_ingested(mine, store_id)["file_counts"] == {
            "in_progress": 0,
            "completed": 1,
            "failed": 1,
            "cancelled": 0,
            "total": 2,
        }
        failed = me.get(f"/console/knowledge/{store_id}").text
        assert 'data-field="file-status">failed' in failed and 'data-field="file-error">' in failed


def test_a_redelivery_and_pause_resume_act_for_their_tenant_only_and_need_the_token(
    tenants: tuple[Tenant, Tenant], model: ScriptedModel, receiver: Receiver
) -> None:
    mine, theirs = tenants
    endpoint_id, delivery = endpoint_with_delivery(mine, model, receiver)
    automation = weekly_automation(mine, "weekly report")
    redeliver = f"/console/webhooks/{endpoint_id}/deliveries/{delivery['id']}/redeliver"
    with console(mine) as me, console(theirs) as them:
        shown = me.get("/console/webhooks")
        assert shown.status_code == 200 and delivery["id"] in shown.text and automation.id in shown.text
        next_run = re.search(rf'data-automation="{automation.id}".*?data-field="next-run">([^<]+)<', shown.text, re.S)
        assert next_run is not None and re.fullmatch(r"\d{4}-\d\d-\d\d 0[78]:00 UTC", next_run.group(1)), next_run

        theirs_shown = them.get("/console/webhooks")
        assert delivery["id"] not in theirs_shown.text and automation.id not in theirs_shown.text
        refused = them.post(redeliver, data={"csrf_token": them.csrf})  # type: ignore[attr-defined]
        assert refused.status_code == 404 and "not found" in refused.text.lower()
        paused_by_them = them.post(
            f"/console/automations/{automation.id}/pause",
            data={"csrf_token": them.csrf},  # type: ignore[attr-defined]
        )
        assert paused_by_them.status_code == 404

        assert me.post(redeliver).status_code == 403
        assert me.post(f"/console/automations/{automation.id}/pause").status_code == 403
        assert mine.openai.beta.agents.automations.retrieve(automation.id).status == "active"
        log = mine.http.get(f"/v1/webhook_endpoints/{endpoint_id}/deliveries").json()["data"][0]
        assert log["redeliveries"] == 0

        sent = me.post(redeliver, data={"csrf_token": me.csrf})  # type: ignore[attr-defined]
        assert sent.status_code == 200 and "is being sent again" in sent.text
        assert mine.http.get(f"/v1/webhook_endpoints/{endpoint_id}/deliveries").json()["data"][0]["redeliveries"] == 1
        receiver.wait_for(2)

        paused = me.post(f"/console/automations/{automation.id}/pause", data={"csrf_token": me.csrf})  # type: ignore[attr-defined]
        assert paused.status_code == 200 and f"Automation {automation.id} is paused" in paused.text
        assert mine.openai.beta.agents.automations.retrieve(automation.id).status == "paused"
        resumed = me.post(f"/console/automations/{automation.id}/resume", data={"csrf_token": me.csrf})  # type: ignore[attr-defined]
        assert resumed.status_code == 200
        assert mine.openai.beta.agents.automations.retrieve(automation.id).status == "active"
    mine.openai.beta.agents.automations.delete(automation.id)
    mine.http.delete(f"/v1/webhook_endpoints/{endpoint_id}")


def test_usage_charts_the_tenants_own_tokens_and_cost_by_day_and_model(
    tenants: tuple[Tenant, Tenant], model: ScriptedModel
) -> None:
    mine, theirs = tenants
    priced_session(mine, model, "Hello there, friend")
    with console(mine) as me, console(theirs) as them:
        shown = me.get("/console/usage")
        assert shown.status_code == 200
        # The module's tenant made calls on another model too (the other pages' tests): each model has its colour.
        assert re.search(r'<rect class="bar" [^>]*fill="#[0-9a-f]{6}"><title>[0-9-]+ · ' + PRICED_MODEL, shown.text)
        row = re.search(
            rf"<td><code>{PRICED_MODEL}</code></td><td>(\d+)</td><td>([\d,]+)</td><td>([\d,]+)</td><td>([\d.]+)</td>",
            shown.text,
        )
        assert row is not None, shown.text
        calls, tokens_in, tokens_out, usd = row.groups()
        tokens = int(tokens_in.replace(",", "")) + int(tokens_out.replace(",", ""))
        assert int(calls) >= 1 and tokens > 0
        assert float(usd) == pytest.approx(tokens / 100, abs=1e-4)  # a cent a token
        refused = me.get("/console/usage", params={"days": 3})
        assert refused.status_code == 400 and "days" in refused.text

        theirs_shown = them.get("/console/usage")
        assert PRICED_MODEL not in theirs_shown.text and "No model calls" in theirs_shown.text


def _usage_rows(page: str) -> dict[str, tuple[int, int, int, float]]:
    """The usage table's rows by model (one day here): calls, input tokens, output tokens, USD."""
    found = re.findall(
        r"<td><code>([^<]+)</code></td><td>(\d+)</td><td>([\d,]+)</td><td>([\d,]+)</td><td>([\d.]+)</td>", page
    )
    return {
        model: (int(calls), int(tokens_in.replace(",", "")), int(tokens_out.replace(",", "")), float(usd))
        for model, calls, tokens_in, tokens_out, usd in found
    }


def test_usage_counts_a_llama_stack_turn_and_a_responses_response_with_their_tokens(
    tenants: tuple[Tenant, Tenant], model: ScriptedModel
) -> None:
    mine, theirs = tenants  # the module's: the other tests' calls are on the page too, so this one compares
    with console(mine) as me, console(theirs) as them:
        before = _usage_rows(me.get("/console/usage").text)
        theirs_before = them.get("/console/usage").text
        model.script(text("one two three four"))
        config = {"model": SCRIPTED_MODEL, "instructions": "Be brief."}
        agent_id = mine.http.post("/v1/agents", json={"agent_config": config}).json()["agent_id"]
        session = mine.http.post(f"/v1/agents/{agent_id}/session", json={"session_name": "usage"}).json()
        ask = {"messages": [{"role": "user", "content": "count to four"}], "stream": True}
        turn = final_turn(mine.http.post(f"/v1/agents/{agent_id}/session/{session['session_id']}/turn", json=ask))
        assert turn["output_message"]["content"].strip() == "one two three four", turn
        model.script(text("five six seven"))
        response = mine.openai.responses.create(model=PRICED_MODEL, input="count on to seven")
        assert response.usage is not None and response.usage.input_tokens > 0

        after = _usage_rows(me.get("/console/usage").text)
        added = {
            name: tuple(now - then for now, then in zip(row, before.get(name, (0, 0, 0, 0.0)), strict=True))
            for name, row in after.items()
        }
        calls, tokens_in, tokens_out, usd = added[SCRIPTED_MODEL]
        assert (calls, tokens_out, usd) == (1, 4, 0.0) and tokens_in > 0  # the scripted model: words are tokens
        calls, tokens_in, tokens_out, usd = added[PRICED_MODEL]
        assert (calls, tokens_in, tokens_out) == (1, response.usage.input_tokens, response.usage.output_tokens)
        assert usd == pytest.approx((tokens_in + tokens_out) / 100, abs=1e-4)  # a cent a token
        assert _usage_rows(them.get("/console/usage").text) == _usage_rows(theirs_before)


def test_an_upload_past_the_tenants_file_quota_is_refused_with_the_apis_reason(stack: Stack) -> None:
    suffix = uuid.uuid4().hex[:8]
    settings = stack.settings.model_copy(
        update={"api_keys": (f"few-{suffix}:few-key-{suffix}",), "max_files_per_tenant": 1}
    )
    with stack.other_api(settings) as url:
        few = Tenant(url, f"few-key-{suffix}")
        store_id = vector_store(few, "one file only")
        with console(few) as me:
            sent = {"csrf_token": me.csrf, "vector_store_id": store_id}  # type: ignore[attr-defined]
            first = me.post(
                "/console/knowledge/upload", data=sent, files={"file": ("a.txt", NOTES.encode(), "text/plain")}
            )
            assert first.status_code == 303, first.text
            second = me.post("/console/knowledge/upload", data=sent, files={"file": ("b.txt", b"more", "text/plain")})
            assert second.status_code == 400
            assert "Not uploaded" in second.text and "DA_MAX_FILES_PER_TENANT" in second.text, second.text
            assert len(store_files(few, store_id)) == 1
        few.close()
