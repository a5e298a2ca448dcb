"""The page a list route answers with: llama-stack's `start_index` and `limit`, bounded by configuration.

The reference returns every item when `limit` is absent or -1; here that is one page of
`DA_PAGE_LIMIT_DEFAULT` (or `DA_PAGE_LIMIT_MAX`) items, and `has_more` tells the caller to ask
for the next, so no request can make the API read a whole table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Query

from api.services import ServicesDep

ALL = -1
"""`limit=-1`: as many as the server gives in one page."""


@dataclass(frozen=True)
class Window:
    start_index: int
    limit: int


async def page_window(
    services: ServicesDep,
    start_index: Annotated[int | None, Query(ge=0, description="The first item's index (0-based)")] = None,
    limit: Annotated[
        int | None, Query(ge=ALL, description="Items to return; at most the server's page size, -1 for that size")
    ] = None,
) -> Window:
    settings = services.settings
    largest = settings.page_limit_max
    if limit is None:
        size = min(settings.page_limit_default, largest)
    elif limit == ALL:
        size = largest
    else:
        size = min(limit, largest)
    return Window(start_index=start_index or 0, limit=size)


PageDep = Annotated[Window, Depends(page_window)]
