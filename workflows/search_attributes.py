"""Custom search attributes that let an operator find turns in the Temporal UI.

e.g. `SessionId="…"` lists a session's turns, `TurnStatus="awaiting_input"` the ones waiting on a
client. The embedded dev server registers them at start; other clusters need them created once
(see README, "Inspecting turns in the Temporal UI").
"""

from __future__ import annotations

from temporalio.common import SearchAttributeKey

AGENT_ID = SearchAttributeKey.for_keyword("AgentId")
SESSION_ID = SearchAttributeKey.for_keyword("SessionId")
TURN_STATUS = SearchAttributeKey.for_keyword("TurnStatus")
TENANT_ID = SearchAttributeKey.for_keyword("TenantId")
"""The tenant that owns the turn (api/guards/tenancy.py): `default` without API keys."""
RESPONSE_ID = SearchAttributeKey.for_keyword_list("ResponseId")
"""Every response (segment) id of a Responses turn: `ResponseId="resp_…"` finds the response's workflow."""
CONVERSATION_ID = SearchAttributeKey.for_keyword("ConversationId")
"""The conversation a Responses turn belongs to, if any."""

ALL = (AGENT_ID, SESSION_ID, TURN_STATUS, TENANT_ID, RESPONSE_ID, CONVERSATION_ID)
TYPE_NAMES = {key.name: "KeywordList" if key is RESPONSE_ID else "Keyword" for key in ALL}
"""Each attribute's type as `temporal operator search-attribute create --type` and the dev server take it."""
