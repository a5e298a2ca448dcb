"""Attribute filters of a vector store search, as the OpenAI SDK defines them.

A comparison is `{"key", "type": eq|ne|gt|gte|lt|lte|in|nin, "value"}`; a compound is
`{"type": and|or, "filters": [...]}`. A file whose attributes lack the key does not match a comparison (not even
`ne` or `nin`); a key that no file of the store has at all is most likely a typo, which the search refuses with
the keys there are (`unknown_keys`).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Any

COMPARISONS = frozenset({"eq", "ne", "gt", "gte", "lt", "lte", "in", "nin"})
COMPOUNDS = frozenset({"and", "or"})
_ORDERS = {"gt": operator.gt, "gte": operator.ge, "lt": operator.lt, "lte": operator.le}
MAX_DEPTH = 8


class InvalidFilter(ValueError):
    pass


def validate(node: Any, depth: int = 0) -> None:
    """Raise InvalidFilter saying what is wrong with the filter's shape."""
    if depth > MAX_DEPTH:
        raise InvalidFilter(f"filters nest deeper than {MAX_DEPTH} levels")
    if not isinstance(node, dict):
        raise InvalidFilter("a filter is an object: a comparison {key, type, value} or a compound {type, filters}")
    kind = node.get("type")
    if kind in COMPOUNDS:
        members = node.get("filters")
        if not isinstance(members, list) or not members:
            raise InvalidFilter(f"a compound '{kind}' filter needs a non-empty list 'filters'")
        for member in members:
            validate(member, depth + 1)
        return
    if kind not in COMPARISONS:
        raise InvalidFilter(f"unknown filter type {kind!r}; use one of {sorted(COMPARISONS | COMPOUNDS)}")
    if not isinstance(node.get("key"), str) or not node["key"]:
        raise InvalidFilter(f"a '{kind}' comparison needs a 'key' (the attribute's name)")
    value = node.get("value")
    if kind in ("in", "nin"):
        if not isinstance(value, list):
            raise InvalidFilter(f"the value of an '{kind}' comparison is a list")
    elif not isinstance(value, str | int | float | bool):
        raise InvalidFilter(f"the value of an '{kind}' comparison is a string, number or boolean")


def keys(node: dict[str, Any]) -> Iterable[str]:
    if node["type"] in COMPOUNDS:
        for member in node["filters"]:
            yield from keys(member)
    else:
        yield node["key"]


def _compare(kind: str, have: Any, want: Any) -> bool:
    if kind == "eq":
        return bool(have == want)
    if kind == "ne":
        return bool(have != want)
    if kind == "in":
        return have in want
    if kind == "nin":
        return have not in want
    numbers = isinstance(have, int | float) and isinstance(want, int | float)
    if not numbers and not (isinstance(have, str) and isinstance(want, str)):
        return False  # an order between a number and a text is no match, not an error
    return bool(_ORDERS[kind](have, want))


def matches(node: dict[str, Any], attributes: dict[str, Any]) -> bool:
    kind = node["type"]
    if kind == "and":
        return all(matches(member, attributes) for member in node["filters"])
    if kind == "or":
        return any(matches(member, attributes) for member in node["filters"])
    if node["key"] not in attributes:
        return False
    return _compare(kind, attributes[node["key"]], node["value"])
