"""A list page as every list of the OpenAI family answers it: `object: "list"`, the page's items, the ids of
its first and last item (the cursors a caller pages on with `after` / `before`) and whether more follow."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _id(item: Any) -> str:
    return str(item["id"] if isinstance(item, Mapping) else item.id)


def cursors(data: Sequence[Any]) -> dict[str, str | None]:
    """`first_id` and `last_id` of a page of items (dicts or models with an `id`); None on an empty page."""
    return {"first_id": _id(data[0]) if data else None, "last_id": _id(data[-1]) if data else None}


def list_page(data: list[dict[str, Any]], has_more: bool) -> dict[str, Any]:
    return {"object": "list", "data": data, **cursors(data), "has_more": has_more}
