"""MCP tools on Agents API agents and sessions with the unmodified `openai` SDK: the server is listed and called,
its calls are `mcp_call` items, a call that needs approval holds the session in `requires_action` until an
`agent.session.input.mcp_approval_request_result` decides it, and the tool's credentials are sealed: never shown,
never in the store's rows in readable form, never in the turn workflow's history."""

from __future__ import annotations

import time
from typing import Any

import openai
import pytest
from openai import OpenAI

from tests.support import mcp_server
from tests.support.processes import EVENT_SECONDS, wait_until
from tests.support.scripted_model import ScriptedModel, ThreadedServer, text, tool_call
from tests.support.stack import SCRIPTED_MODEL, Stack

NONE: Any = {"type": "none"}
HEADER_SECRET = "header-secret-5e07"
VAULT_TOKEN = mcp_server.SECRET.removeprefix("Bearer ")


def mcp_tool(server: ThreadedServer, allowed: list[str], approval: Any = None) -> Any:
    tool = {
        "type": "mcp",
        "server_label": "calc",
        "transport": {
            "type": "http",
            "server_url": f"{server.allowed_url}/mcp",
            "authorization": VAULT_TOKEN,
            "headers": {"X-Api-Key": HEADER_SECRET},
        },
        "allowed_tools": allowed,
    }
    return tool | ({"require_approval": approval} if approval is not None else {})


def wait_status(client: OpenAI, session_id: str, wanted: str, seconds: float = EVENT_SECONDS) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        session = client.beta.agents.sessions.retrieve(session_id)
        if session.status == wanted or time.monotonic() > deadline:
            return session
        time.sleep(0.05)


def decide(client: OpenAI, session_id: str, request_id: str, decision: str) -> None:
    event: Any = {
        "type": "agent.session.input.mcp_approval_request_result",
        "request_id": request_id,
        "response": {"type": "mcp_tool_call", "decision": decision},
    }
    client.beta.agents.sessions.events.create(session_id, events=[event])


def history_json(stack: Stack, session_id: str) -> str:
    """The histories of the session's turn workflows, found as an operator would (visibility is eventually
    consistent), each read once closed (the session is idle once the turn's end is stored, before that)."""

    async def listed() -> list[str]:
        return [wf.id async for wf in stack.client.list_workflows(f'SessionId = "{session_id}"')]

    found = wait_until(lambda: stack.background.run(listed()), f"session {session_id}'s workflows", EVENT_SECONDS)
    return "\n".join(stack.closed_history(workflow_id).to_json() for workflow_id in found)


def test_a_saved_agents_mcp_tool_is_called_with_its_sealed_credentials(
    client: OpenAI, model: ScriptedModel, stack: Stack, mcp: ThreadedServer
) -> None:
    agent = client.beta.agents.create(
        model=SCRIPTED_MODEL, tools=[mcp_tool(mcp, ["open_vault", "add_numbers"], "never")]
    )
    shown = agent.model_dump_json()
    assert VAULT_TOKEN not in shown and HEADER_SECRET not in shown
    assert agent.tools[0].type == "mcp" and agent.tools[0].transport.headers == {}
    model.script(tool_call("open_vault"), text("The vault is open."))
    session = client.beta.agents.sessions.create(environment=NONE, agent_id=agent.id, input="Open the vault.")
    done = wait_status(client, session.id, "idle")
    assert done.status == "idle", done
    items = client.beta.agents.sessions.items.list(session.id).data
    calls = [item for item in items if item.type == "mcp_call"]
    assert [(c.name, c.server_label, c.output, c.status) for c in calls] == [
        ("open_vault", "calc", "the vault is open", "completed")
    ]
    assert items[-1].type == "message" and items[-1].content[0].text.strip() == "The vault is open."
    assert VAULT_TOKEN not in done.model_dump_json()
    assert HEADER_SECRET not in history_json(stack, session.id)
    assert VAULT_TOKEN not in history_json(stack, session.id)
    assert HEADER_SECRET not in stack.store_text() and VAULT_TOKEN not in stack.store_text()


@pytest.mark.parametrize("decision", ["approve", "deny"])
def test_an_mcp_call_waits_for_the_callers_approval(
    client: OpenAI, model: ScriptedModel, stack: Stack, mcp: ThreadedServer, decision: str
) -> None:
    model.script(tool_call("add_numbers", {"a": 4, "b": 5}), text("done"))
    session = client.beta.agents.sessions.create(
        environment=NONE,
        agent={"model": SCRIPTED_MODEL, "tools": [mcp_tool(mcp, ["add_numbers"])]},  # approval: "always"
        input="add 4 and 5",
    )
    waiting = wait_status(client, session.id, "requires_action")
    assert waiting.status == "requires_action", waiting
    [action] = waiting.required_actions
    assert action.type == "mcp_approval_request"
    assert (action.request.server_label, action.request.name) == ("calc", "add_numbers")
    assert action.request.arguments == {"a": 4, "b": 5}
    with pytest.raises(openai.BadRequestError, match="No MCP approval request"):
        decide(client, session.id, "mcpr_unknown", "approve")
    assert not [item for item in client.beta.agents.sessions.items.list(session.id).data if item.type == "mcp_call"]
    decide(client, session.id, action.request_id, decision)
    done = wait_status(client, session.id, "idle")
    assert done.status == "idle" and done.required_actions == [], done
    items = client.beta.agents.sessions.items.list(session.id).data
    calls = [item for item in items if item.type == "mcp_call"]
    if decision == "approve":
        assert [(c.name, c.output) for c in calls] == [("add_numbers", "9")]
    else:
        assert calls == []  # it never ran; the model read that it was denied
        tool_messages = [m for m in model.requests[-1]["messages"] if m["role"] == "tool"]
        assert "denied" in str(tool_messages)
    [turn] = client.beta.agents.sessions.turns.list(session.id).data
    assert turn.status == "completed"
    assert HEADER_SECRET not in history_json(stack, session.id)


def test_the_stream_shows_the_approval_and_the_resumed_call(
    client: OpenAI, model: ScriptedModel, mcp: ThreadedServer
) -> None:
    model.script(tool_call("add_numbers", {"a": 1, "b": 2}), text("three"))
    stream = client.beta.agents.sessions.create(
        environment=NONE,
        agent={"model": SCRIPTED_MODEL, "tools": [mcp_tool(mcp, ["add_numbers"], "always")]},
        input="add 1 and 2",
        stream=True,
    )
    kinds = []
    for event in stream:
        kinds.append(event.type)
        if event.type == "agent.session.requires_action":
            [action] = event.session.required_actions
            decide(client, event.session.id, action.request_id, "approve")
        if event.type == "agent.session.idle":
            break
    after = kinds[kinds.index("agent.session.requires_action") :]
    assert after[:3] == ["agent.session.requires_action", "agent.session.in_progress", "agent.session.turn.item.added"]
    assert "agent.session.turn.completed" in after


def test_mcp_tools_that_cannot_run_here_are_refused_with_a_reason(client: OpenAI, mcp: ThreadedServer) -> None:
    stdio: Any = {"type": "mcp", "server_label": "x", "transport": {"type": "stdio", "command": "x", "cwd": "/"}}
    with pytest.raises(openai.BadRequestError, match="only transport type 'http'"):
        client.beta.agents.create(model=SCRIPTED_MODEL, tools=[stdio])
    metadata: Any = mcp_tool(mcp, ["add_numbers"]) | {
        "transport": {"type": "http", "server_url": "http://169.254.169.254/mcp"}
    }
    with pytest.raises(openai.BadRequestError):
        client.beta.agents.create(model=SCRIPTED_MODEL, tools=[metadata])
