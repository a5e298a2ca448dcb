"""Our search attributes (workflows/search_attributes.py) in the Temporal namespace, at every start.

Temporal keeps a namespace's search attributes itself, and a workflow that sets one its namespace lacks
fails its task. The dev server's `--search-attribute` flags apply only when it creates the namespace, so
a data directory from an earlier release keeps the namespace, and the attributes, it was made with.
Hence, at every start:

- the embedded stack (`make run`) adds what its namespace lacks through the operator service
  (`add_missing_search_attributes`), before the API and the worker start;
- an API or worker against any other cluster checks (`require_search_attributes`) and, when some are
  missing, stops at once with one message naming each and the command that creates it: adding search
  attributes to a shared cluster is its operator's decision, not a side effect of starting a process.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest, ListSearchAttributesRequest
from temporalio.client import Client
from temporalio.common import SearchAttributeKey
from temporalio.service import RPCError, RPCStatusCode

from workflows import search_attributes

log = logging.getLogger(__name__)


class MissingSearchAttributes(RuntimeError):
    """The namespace lacks search attributes turns set; the message says which and how to create them."""


async def missing_search_attributes(client: Client) -> list[SearchAttributeKey[Any]] | None:
    """Ours that the client's namespace lacks; None when the client may not list them."""
    try:
        response = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=client.namespace)
        )
    except RPCError as error:
        if error.status == RPCStatusCode.PERMISSION_DENIED:
            return None
        raise
    present = {**response.custom_attributes, **response.system_attributes}
    return [key for key in search_attributes.ALL if key.name not in present]


def create_commands(namespace: str, keys: list[SearchAttributeKey[Any]]) -> list[str]:
    """The `temporal` CLI commands that create `keys` in `namespace`."""
    return [
        f"temporal operator search-attribute create --namespace {namespace} --name {key.name} "
        f"--type {search_attributes.TYPE_NAMES[key.name]}"
        for key in keys
    ]


async def require_search_attributes(client: Client) -> None:
    """Raise MissingSearchAttributes, saying how to fix it, when the namespace lacks any of ours."""
    missing = await missing_search_attributes(client)
    if missing is None:
        log.warning("cannot list the search attributes of namespace %r; assuming they exist", client.namespace)
        return
    if missing:
        names = ", ".join(key.name for key in missing)
        commands = "\n".join(f"  {command}" for command in create_commands(client.namespace, missing))
        raise MissingSearchAttributes(
            f"Temporal namespace {client.namespace!r} lacks the search attributes {names}, which turn workflows "
            f"set. Create them once (they are kept), then start again:\n{commands}"
        )


async def add_missing_search_attributes(client: Client, wait_seconds: float = 30.0) -> list[str]:
    """Add to the client's namespace the search attributes of ours it lacks; the names added.

    Returns once the namespace lists them all, so that nothing started afterwards finds one missing."""
    missing = await missing_search_attributes(client)
    if not missing:
        return []
    await client.operator_service.add_search_attributes(
        AddSearchAttributesRequest(
            namespace=client.namespace,
            search_attributes={key.name: IndexedValueType.ValueType(key.indexed_value_type.value) for key in missing},
        )
    )
    deadline = time.monotonic() + wait_seconds
    while await missing_search_attributes(client):
        if time.monotonic() > deadline:
            await require_search_attributes(client)  # raises, naming what is still missing
        await asyncio.sleep(0.1)
    return [key.name for key in missing]
