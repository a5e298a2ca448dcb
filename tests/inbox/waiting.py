"""What the inbox tests share: a tenant's clients, and turns of each dialect paused the way a client pauses them."""

from __future__ import annotations

from typing import Any

import httpx
from openai import OpenAI

from tests.agents_beta.test_spend_control import WEATHER, wait_status
from tests.responses.test_responses_tools import mcp_tool
from tests.support.rest import BOILING_TOOL, final_turn
from tests.support.scripted_model import ScriptedModel, ThreadedServer, tool_call
from tests.support.stack import SCRIPTED_MODEL

NONE: Any = {"type": "none"}


class Tenant:
    """One tenant of the keyed API: its key, an httpx client and the openai SDK, both sending that key."""

    def __init__(self, url: str, key: str) -> None:
        self.http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60)
        self.openai = OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0, timeout=60)

    def inbox(self, **params: Any) -> dict[str, Any]:
        answer = self.http.get("/v1/inbox", params=params)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def close(self) -> None:
        self.http.close()
        self.openai.close()


def paused_llama_turn(tenant: Tenant, model: ScriptedModel, script: bool = True) -> dict[str, Any]:
    """`script`: False when the caller has scripted the model's tool call itself."""
    if script:
        model.script(tool_call("get_boiling_point", {"liquid_name": "polyjuice"}))
    config = {"model": SCRIPTED_MODEL, "instructions": "Be brief.", "client_tools": [BOILING_TOOL]}
    agent_id = tenant.http.post("/v1/agents", json={"agent_config": config}).json()["agent_id"]
    session_id = tenant.http.post(f"/v1/agents/{agent_id}/session", json={"session_name": "inbox"}).json()["session_id"]
    ask = {"messages": [{"role": "user", "content": "boil"}], "stream": True}
    turn = final_turn(tenant.http.post(f"/v1/agents/{agent_id}/session/{session_id}/turn", json=ask))
    assert turn["status"] == "awaiting_input", turn
    return {"agent_id": agent_id, "session_id": session_id, "turn_id": turn["turn_id"]}


def function_call_response(tenant: Tenant, model: ScriptedModel) -> Any:
    model.script(tool_call("get_weather", {"city": "Oslo"}))
    response = tenant.openai.responses.create(model=SCRIPTED_MODEL, input="weather?", tools=[WEATHER])
    assert [item.type for item in response.output] == ["function_call"]
    return response


def approval_response(tenant: Tenant, model: ScriptedModel, mcp: ThreadedServer) -> Any:
    model.script(tool_call("add_numbers", {"a": 4, "b": 5}))
    response = tenant.openai.responses.create(model=SCRIPTED_MODEL, input="add", tools=[mcp_tool(mcp, "always")])  # type: ignore[list-item]
    assert [item.type for item in response.output] == ["mcp_list_tools", "mcp_approval_request"]
    return response


def waiting_session(tenant: Tenant, model: ScriptedModel) -> Any:
    model.script(tool_call("get_weather", {"city": "Lima"}))
    created = tenant.openai.beta.agents.sessions.create(
        environment=NONE, agent={"model": SCRIPTED_MODEL, "instructions": "Brief.", "tools": [WEATHER]}, input="Lima?"
    )
    waiting = wait_status(tenant.openai, created.id, "requires_action")
    assert waiting.status == "requires_action", waiting
    return waiting
