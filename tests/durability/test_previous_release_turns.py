"""Turns of the release before the runtime became dialect-neutral keep working after the upgrade.

Their workflow input carries an agent outline, not a plan, and their resume a submission of tool
results only. tests/durability/histories/client_tool_turn_paused_on_main.json (recorded with that release, a turn
still waiting) replays on this code (tests/durability/test_replay.py); here such a turn, started with that
release's input, pauses and resumes through the API on this code, exactly as before."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime

import httpx

from api.turn_gateway import TurnGateway
from domain.agents import AgentConfig
from domain.content import UserMessage
from domain.turns import TurnStatus
from tests.support.processes import EVENT_SECONDS
from tests.support.rest import create_agent, create_session
from tests.support.scripted_model import ScriptedModel, text, tool_call
from tests.support.stack import Stack
from workflows.contracts import AgentOutline, TurnStart


def test_a_turn_started_with_the_previous_releases_input_pauses_and_resumes(
    stack: Stack, http: httpx.Client, model: ScriptedModel
) -> None:
    model.script(tool_call("get_boiling_point", {"liquid_name": "polyjuice"}), text("It boils at -100."))
    agent_id = create_agent(http)
    session_id = create_session(http, agent_id)
    config = AgentConfig.model_validate(http.get(f"/v1/agents/{agent_id}").json()["agent_config"])
    turn_id, started_at = str(uuid.uuid4()), datetime.now(UTC)
    question = [UserMessage(content="how hot?")]
    stack.background.run(stack.store.turns.begin_turn(agent_id, session_id, turn_id, question, started_at))
    legacy = TurnStart(
        agent_id=agent_id, session_id=session_id, turn_id=turn_id, agent=AgentOutline.of(config), started_at=started_at
    )
    assert legacy.plan is None
    stack.background.run(TurnGateway(stack.client, stack.settings.task_queue).start(legacy, "default", "how hot?"))

    turn_url = f"/v1/agents/{agent_id}/session/{session_id}/turn/{turn_id}"
    deadline = time.monotonic() + EVENT_SECONDS
    while (paused := http.get(turn_url).json())["status"] != TurnStatus.AWAITING_INPUT:
        assert time.monotonic() < deadline, paused
        time.sleep(0.1)
    [call] = paused["output_message"]["tool_calls"]
    results = [{"call_id": call["call_id"], "tool_name": "get_boiling_point", "content": "-100"}]
    done = http.post(f"{turn_url}/resume", json={"tool_responses": results})

    assert done.status_code == 200, done.text
    turn = done.json()
    assert turn["status"] == "completed" and turn["output_message"]["content"] == "It boils at -100. "
    assert [step["step_type"] for step in turn["steps"]] == ["inference", "tool_execution", "inference"]
    assert "followup_messages" not in turn["steps"][1]
    assert model.requests[-1]["messages"][0] == {"role": "system", "content": "Be brief."}
    assert model.requests[-1]["messages"][-1] == {"role": "tool", "tool_call_id": call["call_id"], "content": "-100"}
