"""The knowledge tools a turn offers its model: the Responses `file_search` tool and llama-stack's
`builtin::rag/knowledge_search`. Both run as the turn's ordinary `run_tool` activity
(activities/knowledge_search.py searches); here is only what the model is offered.
"""

from __future__ import annotations

from typing import Any

from domain.tools import BUILTIN_PROVIDER
from workflows.contracts import FileSearchConfig, ServerTool

FILE_SEARCH = "file_search"
"""The Responses tool's name, as the model sees it and as `tool_choice` names it; also its toolgroup id."""
RAG_TOOLGROUP = "builtin::rag"
KNOWLEDGE_SEARCH = "knowledge_search"

_QUERY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "The words to look up in the documents."}},
    "required": ["query"],
}

KNOWLEDGE_SEARCH_TOOL = ServerTool(
    toolgroup_id=RAG_TOOLGROUP,
    provider_id=BUILTIN_PROVIDER,
    name=KNOWLEDGE_SEARCH,
    description="Search for information in a database.",
    input_schema=_QUERY_SCHEMA,
)


def file_search_tool(config: FileSearchConfig) -> ServerTool:
    """The request's file_search tool as a server tool; its configuration rides in `args`, which the
    activity reads (the model's arguments never override it)."""
    return ServerTool(
        toolgroup_id=FILE_SEARCH,
        provider_id=BUILTIN_PROVIDER,
        name=FILE_SEARCH,
        description=(
            "Search the user's uploaded files for passages relevant to a query. Cite what you use by "
            "writing the marker shown before a passage right after the sentence that uses it."
        ),
        input_schema=_QUERY_SCHEMA,
        args={"file_search": config.model_dump(mode="json")},
    )


def is_knowledge_tool(tool: ServerTool) -> bool:
    return tool.provider_id == BUILTIN_PROVIDER and tool.toolgroup_id in (FILE_SEARCH, RAG_TOOLGROUP)
