"""A new turn's first model call, as far as it is known before its workflow runs.

The API may begin that call while the workflow starts (activities/early_inference.py): a foreground
response's model then hears of it one Temporal round trip and a workflow task sooner. Only a turn whose
first call depends on nothing decided on the way to it qualifies; everything else returns None here.
"""

from __future__ import annotations

from domain.agents import ToolConfig
from workflows.contracts import InferenceRequest, TurnStart


def first_inference(start: TurnStart) -> InferenceRequest | None:
    """The request the turn's workflow makes its first model call with, but for the step id, the writes it
    carries and the end it may write (which do not change what the model is asked). None when anything
    before that call could change it or hold it back — documents to fetch, tools to list, an input shield,
    a compaction, a spend check — or when the call may run on another worker (not a local activity)."""
    plan = start.turn_plan()
    if (
        not start.local_inference
        or start.continuation is not None
        or start.reopened_with
        or start.document_urls
        or start.toolgroups
        or plan.toolgroups
        or plan.mcp_servers
        or plan.file_search is not None
        or plan.input_shields
        or plan.compact_threshold is not None
        or start.spend_session_id is not None
    ):
        return None
    return InferenceRequest(
        turn_id=start.turn_id,
        session_id=start.session_id,
        step_id="",
        tool_config=start.tool_config or plan.tool_config or ToolConfig(),
        settings_id=plan.settings_id,
    )
