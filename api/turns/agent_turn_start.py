"""The workflow input of an agent's turn, made from its stored rows: for a new turn, for a retried create, and for
the sweep that starts a turn whose recording process died before it could."""

from __future__ import annotations

from collections.abc import Sequence

from api.services import Services
from domain.agents import Agent
from domain.content import InputMessage, content_as_text
from domain.turns import Turn
from store.turns.records import TurnTools
from workflows.contracts import AgentOutline, TurnPlan, TurnStart


def workflow_summary(messages: Sequence[InputMessage]) -> str:
    """What labels the turn's workflow in Temporal's UI: the user's message (the gateway shortens it)."""
    return " ".join(content_as_text(m.content) for m in messages)[:1000]


def turn_start(services: Services, agent: Agent, turn: Turn, tools: TurnTools, document_urls: list[str]) -> TurnStart:
    """The workflow input of a new turn: references to its stored rows, its plan (the agent's, with the
    turn's own tools in place of the agent's), its URL documents."""
    plan = TurnPlan.of(AgentOutline.of(agent.agent_config))
    if tools.toolgroups is not None:
        plan.toolgroups = tools.toolgroups
    if tools.tool_config is not None:
        plan.tool_config = tools.tool_config
    plan.compact_threshold = services.settings.session_compact_threshold
    return TurnStart(
        agent_id=agent.agent_id,
        session_id=turn.session_id,
        turn_id=turn.turn_id,
        plan=plan,
        started_at=turn.started_at,
        document_urls=document_urls,
        awaiting_input_timeout=services.settings.awaiting_input_timeout,
        continue_as_new_after_events=services.settings.continue_as_new_after_events,
        inference_writes_end=True,
    )
