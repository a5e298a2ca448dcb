"""The web search tool a turn offers its model: llama-stack's `builtin::websearch` (tool `web_search`) and the
Responses `web_search` tool. Both run as the turn's ordinary `run_tool` activity on the configured search
engine (tool_runtime/web_search.py); here is only what the model is offered."""

from __future__ import annotations

from domain.tools import BUILTIN_PROVIDER
from workflows.contracts import ServerTool, WebSearchConfig

WEB_SEARCH_PATCH = "web-search-v1"
"""The turn workflow offers a Responses request's web_search tool from here on."""
WEB_SEARCH_TOOLGROUP = "builtin::websearch"
WEB_SEARCH = "web_search"
"""The tool's name as the model sees it, in both dialects."""

WEB_SEARCH_TOOL = ServerTool(
    toolgroup_id=WEB_SEARCH_TOOLGROUP,
    provider_id=BUILTIN_PROVIDER,
    name=WEB_SEARCH,
    description=(
        "Search the web for current information. Cite what you use by writing the URL of the result it came from."
    ),
    input_schema={
        "type": "object",
        "properties": {"query": {"type": "string", "description": "What to search the web for."}},
        "required": ["query"],
    },
)


def web_search_tool(config: WebSearchConfig) -> ServerTool:
    """The request's web_search tool as a server tool; what it narrows rides in `args`, which override the
    model's arguments."""
    return WEB_SEARCH_TOOL.model_copy(update={"args": config.model_dump(exclude_none=True)})


def is_web_search(tool: ServerTool) -> bool:
    return tool.provider_id == BUILTIN_PROVIDER and tool.toolgroup_id == WEB_SEARCH_TOOLGROUP
