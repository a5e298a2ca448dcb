"""More of llama-stack-client 0.7.x against our API (spec §9b), unmodified, in `.venv-lsc`.

`python lsc_more.py <root URL> <llama-stack-client|openai> <model> <MCP server URL>`. An `Agent` turn
with `stream=False` (the helper still streams) in which the model calls the client tool twice at once;
the client's other response calls on that response (retrieve, list, delete); and a second `Agent` whose
tool is an MCP server the server calls itself. The last output line is a JSON summary for the test.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from llama_stack_client import Agent
from llama_stack_client.lib.agents.client_tool import client_tool
from llama_stack_client.lib.agents.turn_events import StepCompleted, TurnCompleted, TurnFailed
from lsc_agent import client_for  # beside this script

calls: list[str] = []


@client_tool
def get_boiling_point(liquid_name: str, celcius: bool = True) -> int:
    """Returns the boiling point of a liquid in Celcius or Fahrenheit.

    :param liquid_name: The name of the liquid
    :param celcius: Whether to return the boiling point in Celcius
    :return: The boiling point of the liquid
    """
    calls.append(liquid_name)
    return -100 if liquid_name == "polyjuice" else 100


def main(root: str, kind: str, model: str, mcp_url: str) -> None:
    client = client_for(root, kind)
    agent = Agent(client, model=model, instructions="You are a helpful assistant", tools=[get_boiling_point])
    session_id = agent.create_session("lsc-more")
    response = agent.create_turn(
        messages=[{"role": "user", "content": "Boiling points of polyjuice and water?"}],
        session_id=session_id,
        stream=False,
    )
    summary: dict[str, Any] = {
        "calls": calls,
        "response": {"id": response.id, "status": response.status, "text": response.output_text},
        "retrieved": client.responses.retrieve(response.id).status,
        "items": [item.type for item in client.conversations.items.list(conversation_id=session_id, order="asc")],
    }
    if kind == "llama-stack-client":  # openai.OpenAI has no responses.list; its delete returns None
        summary["listed"] = [listed.id for listed in client.responses.list(limit=5)]
        summary["deleted"] = client.responses.delete(response.id).deleted
    else:
        client.responses.delete(response.id)
    try:
        client.responses.retrieve(response.id)
        summary["after_delete"] = "found"
    except Exception as error:  # each client raises its own NotFoundError
        summary["after_delete"] = getattr(error, "status_code", repr(error))

    server = {"type": "mcp", "server_label": "calc", "server_url": mcp_url, "require_approval": "never"}
    calculator = Agent(client, model=model, instructions="Use the calculator.", tools=[server])
    events = [
        chunk.event
        for chunk in calculator.create_turn(
            messages=[{"role": "user", "content": "add 2 and 3"}],
            session_id=calculator.create_session("lsc-mcp"),
            stream=True,
        )
    ]
    steps = [event for event in events if isinstance(event, StepCompleted)]
    summary["mcp"] = {
        "step_types": [step.step_type for step in steps],
        "server_calls": [
            call.tool_name for step in steps if step.step_type == "tool_execution" for call in step.result.tool_calls
        ],
        "final_text": [event.final_text for event in events if isinstance(event, TurnCompleted)],
        "failed": [event.error_message for event in events if isinstance(event, TurnFailed)],
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main(*sys.argv[1:5])
