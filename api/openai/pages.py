"""A list page as every list of the OpenAI family answers it: `object: "list"`, the page's items, the ids of
its first and last item (`""` on an empty page; the cursors a caller pages on with `after` / `before`) and
whether more follow."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _id(item: Any) -> str:
    return str(item["id"] if isinstance(item, Mapping) else item.id)


def cursors(data: Sequence[Any]) -> dict[str, str]:
    """`first_id` and `last_id` of a page of items (dicts or models with an `id`); `""` on an empty page, as the
    OpenAI schema types them strings and clients generated from it (OGX's) fail to parse a null."""
    return {"first_id": _id(data[0]) if data else "", "last_id": _id(data[-1]) if data else ""}


def list_page(data: list[dict[str, Any]], has_more: bool) -> dict[str, Any]:
    return {"object": "list", "data": data, **cursors(data), "has_more": has_more}
