"""Plain-HTTP helpers: what any non-Python caller of the API would do."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.support.stack import SCRIPTED_MODEL

BOILING_TOOL: dict[str, Any] = {
    "name": "get_boiling_point",
    "description": "Boiling point of a liquid",
    "parameters": [{"name": "liquid_name", "parameter_type": "str", "description": "Liquid", "required": True}],
}


def create_agent(http: httpx.Client, **config: Any) -> str:
    agent_config = {"model": SCRIPTED_MODEL, "instructions": "Be brief.", "client_tools": [BOILING_TOOL], **config}
    response = http.post("/v1/agents", json={"agent_config": agent_config})
    response.raise_for_status()
    return response.json()["agent_id"]


def create_session(http: httpx.Client, agent_id: str) -> str:
    response = http.post(f"/v1/agents/{agent_id}/session", json={"session_name": "test"})
    response.raise_for_status()
    return response.json()["session_id"]


def sse_events(response: httpx.Response) -> list[tuple[int | None, dict[str, Any]]]:
    """(id, data) of each event of a finished SSE response; keepalive comments are skipped."""
    events = []
    for block in response.text.split("\n\n"):
        lines = [line for line in block.split("\n") if line and not line.startswith(":")]
        if not lines:
            continue
        fields = dict(line.split(": ", 1) for line in lines)
        events.append((int(fields["id"]) if "id" in fields else None, json.loads(fields["data"])))
    return events


def final_turn(response: httpx.Response) -> dict[str, Any]:
    return sse_events(response)[-1][1]["event"]["payload"]["turn"]
