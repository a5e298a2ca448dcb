"""llama-stack sessions with DA_SESSION_COMPACT_THRESHOLD: once a session's context passes the threshold,
its older turns are summarised — the model reads the summary, not a window that silently dropped them — and
every turn stays retrievable."""

from __future__ import annotations

import httpx

from compaction.summary import SUMMARY_INSTRUCTIONS, SUMMARY_PREFIX
from tests.support.rest import create_agent, create_session, final_turn
from tests.support.scripted_model import ScriptedModel, text
from tests.support.stack import Stack

TURNS = 8


def test_a_long_session_is_summarised_not_dropped(stack: Stack, model: ScriptedModel) -> None:
    settings = stack.settings.model_copy(update={"session_compact_threshold": 80})
    model.script()
    with stack.other_api(settings) as url, httpx.Client(base_url=url, timeout=120) as http:
        agent_id = create_agent(http, client_tools=[])
        session_id = create_session(http, agent_id)
        turns = f"/v1/agents/{agent_id}/session/{session_id}/turn"
        for index in range(TURNS):
            ask = {"messages": [{"role": "user", "content": f"turn {index}: what about the weather tomorrow?"}]}
            answered = http.post(turns, json={**ask, "stream": True})
            assert final_turn(answered)["status"] == "completed"
        session = http.get(f"/v1/agents/{agent_id}/session/{session_id}").json()

    assert len(session["turns"]) == TURNS  # nothing deleted: every turn is retrievable
    summaries = [body for body in model.requests if body["messages"][0]["content"] == SUMMARY_INSTRUCTIONS]
    answers = [body["messages"] for body in model.requests if body["messages"][0]["content"] != SUMMARY_INSTRUCTIONS]
    assert summaries and len(answers) == TURNS
    for index, seen in enumerate(answers):
        assert seen[-1]["content"] == f"turn {index}: what about the weather tomorrow?"  # the newest input last
        assert len(seen) <= 8, seen  # without compaction, the last turn would read 16 messages
    compacted = [seen for seen in answers if any(m["content"].startswith(SUMMARY_PREFIX) for m in seen)]
    assert compacted and compacted[-1][1]["role"] == "system"  # after the agent's instructions
    # A later summary covers the earlier one: the summariser read it as part of the transcript.
    assert len(summaries) < 2 or "Summary: ok" in summaries[-1]["messages"][1]["content"]


def test_without_the_setting_a_session_is_not_summarised(
    stack: Stack, model: ScriptedModel, http: httpx.Client
) -> None:
    model.script(text("one"), text("two"))
    agent_id = create_agent(http, client_tools=[])
    turns = f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"
    for content in ("first " * 200, "second"):
        final_turn(http.post(turns, json={"messages": [{"role": "user", "content": content}], "stream": True}))
    assert len(model.requests) == 2 and len(model.requests[-1]["messages"]) == 4
