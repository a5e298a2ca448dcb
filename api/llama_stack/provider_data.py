"""Credentials a caller sends with a request for the MCP servers it reaches, in llama-stack's wire form:
`X-LlamaStack-Provider-Data: {"mcp_headers": {"<endpoint URL>": {"Authorization": "Bearer …"}}}`.

They are used for that request only, held in memory: never stored, listed, logged or put in a workflow.
"""

from __future__ import annotations

import json
from typing import Annotated

from fastapi import Depends, Header, HTTPException

from api.services import Services
from tool_runtime.catalog import McpHeaders
from tool_runtime.credential_seal import CredentialSeal

HEADER = "X-LlamaStack-Provider-Data"


async def mcp_headers(
    provider_data: Annotated[str | None, Header(alias=HEADER, include_in_schema=False)] = None,
) -> McpHeaders | None:
    if not provider_data:
        return None
    try:
        parsed = json.loads(provider_data)
    except ValueError as error:
        raise HTTPException(400, f"{HEADER} must be a JSON object: {error}") from None
    headers = parsed.get("mcp_headers") if isinstance(parsed, dict) else None
    if headers is None:
        return None
    if not isinstance(headers, dict) or not all(
        isinstance(uri_headers, dict) and all(isinstance(v, str) for v in uri_headers.values())
        for uri_headers in headers.values()
    ):
        raise HTTPException(
            400, f'{HEADER}: mcp_headers must map endpoint URLs to headers: {{"<url>": {{"<name>": "<value>"}}}}'
        )
    return headers


McpHeadersDep = Annotated[McpHeaders | None, Depends(mcp_headers)]


def seal_mcp_headers(services: Services, headers: McpHeaders | None) -> str | None:
    """A turn's MCP headers encrypted for the store (api/turns/mcp_headers.py keeps them); None when the
    request brought none. A server without a key refuses them rather than run the turn without them."""
    if not headers:
        return None
    if services.settings.credentials_key is None:
        raise HTTPException(
            400,
            f"{HEADER} carries mcp_headers, but this server cannot hold credentials for a turn: its operator "
            "has not set DA_CREDENTIALS_KEY. Send the turn without them, or ask for the key to be configured.",
        )
    return CredentialSeal(services.settings.credentials_key).seal(headers)
