"""Saved agents of the Agents API (beta) with the unmodified `openai` SDK, beside the llama-stack dialect's
agents on the same paths: each client sees only its own kind."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest
from openai import OpenAI

from tests.support.stack import SCRIPTED_MODEL

TOOL: Any = {
    "type": "function",
    "name": "lookup",
    "description": "Look it up.",
    "parameters": {"type": "object", "properties": {}},
}


def test_agents_crud_keeps_omitted_fields_clears_nulls_and_replaces_metadata(client: OpenAI) -> None:
    agents = client.beta.agents
    made = agents.create(
        model=SCRIPTED_MODEL, name="helper", instructions="Be brief.", metadata={"team": "a", "tier": "1"}, tools=[TOOL]
    )
    assert made.object == "agent" and made.id.startswith("agent_") and made.tools[0].name == "lookup"
    assert made.text.verbosity == "medium" and made.multi_agent.enabled is False

    updated = agents.update(made.id, metadata={"team": "b"}, instructions=None)
    assert updated.metadata == {"team": "b"}  # replaced, not merged
    assert updated.instructions is None  # null clears
    assert (
        updated.name == "helper" and updated.model == SCRIPTED_MODEL and len(updated.tools) == 1
    )  # omitted: unchanged
    assert agents.retrieve(made.id).metadata == {"team": "b"}

    with pytest.raises(openai.BadRequestError, match="not configured"):
        agents.update(made.id, model="no-such-model")
    with pytest.raises(openai.BadRequestError, match="computer_use"):
        agents.create(model=SCRIPTED_MODEL, tools=[{"type": "computer_use"}])

    assert agents.delete(made.id).deleted is True
    with pytest.raises(openai.NotFoundError):
        agents.retrieve(made.id)


def test_agents_list_pages_by_cursor_in_either_order(client: OpenAI) -> None:
    made = [client.beta.agents.create(model=SCRIPTED_MODEL, name=f"paged-{n}").id for n in range(5)]
    ascending = [agent.id for agent in client.beta.agents.list(order="asc", limit=2) if agent.id in made]
    assert ascending == made  # auto-paging follows `after` across pages
    first = client.beta.agents.list(limit=2)
    assert first.has_more and [a.id for a in first.data] == made[::-1][:2]  # desc by default
    second = client.beta.agents.list(limit=2, after=first.data[-1].id)
    assert [a.id for a in second.data] == made[::-1][2:4]
    with pytest.raises(openai.NotFoundError, match="after"):
        client.beta.agents.list(after="agent_unknown")


def test_the_llama_stack_dialect_keeps_its_agents_routes(client: OpenAI, http: httpx.Client) -> None:
    """Same paths, no OpenAI-Beta header: the llama-stack routes answer, as before, with their own agents."""
    beta = client.beta.agents.create(model=SCRIPTED_MODEL, name="beta-one")
    created = http.post("/v1/agents", json={"agent_config": {"model": SCRIPTED_MODEL, "instructions": "hi"}})
    assert created.status_code == 200, created.text
    llama_id = created.json()["agent_id"]
    assert http.get(f"/v1/agents/{llama_id}").json()["agent_id"] == llama_id
    # Its `agent_…` id says it is an OpenAI agent: the Agents API answers, header or not.
    assert http.get(f"/v1/agents/{beta.id}").json()["id"] == beta.id
    listed = http.get("/v1/agents").json()["data"]
    assert llama_id in [a["agent_id"] for a in listed] and beta.id not in [a.get("agent_id") for a in listed]
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.retrieve(llama_id)
    assert beta.id in [a.id for a in client.beta.agents.list(limit=100)]
    assert llama_id not in [a.id for a in client.beta.agents.list(limit=100)]
