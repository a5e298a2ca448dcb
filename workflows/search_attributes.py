"""Custom search attributes that let an operator find turns in the Temporal UI.

e.g. `SessionId="…"` lists a session's turns, `TurnStatus="awaiting_input"` the ones waiting on a
client. `make run` adds any its dev server's namespace lacks at every start; other clusters need them
created once (docs/upgrades.md).
"""

from __future__ import annotations

from typing import Any

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

AUTOMATION_ID = SearchAttributeKey.for_keyword("AutomationId")
"""The Agents API automation (`auto_…`) an automation's Schedule and its runs belong to: `AutomationId="auto_…"`
finds them."""

ALL = (AGENT_ID, SESSION_ID, TURN_STATUS, TENANT_ID, RESPONSE_ID, CONVERSATION_ID, AUTOMATION_ID)
"""Every search attribute of ours: the one list from which the embedded dev server is given them, an
existing namespace is brought up to date at each start, and another cluster's operator is told what to
create (hosting/search_attribute_schema.py). One added here reaches every install that way."""


def _type_name(key: SearchAttributeKey[Any]) -> str:
    return "".join(word.capitalize() for word in key.indexed_value_type.name.split("_"))  # KEYWORD_LIST: KeywordList


TYPE_NAMES = {key.name: _type_name(key) for key in ALL}
"""Each attribute's type as `temporal operator search-attribute create --type` and the dev server take
it: `Keyword`, `KeywordList`, `Text`, `Int`, `Double`, `Bool` or `Datetime`."""
