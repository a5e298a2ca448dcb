"""The kinds of setting values and their parsers, shared by fields of one kind.

Each parser takes what the environment (always a string) or the TOML file (typed) gives and raises ValueError
saying what is expected; `load_settings` puts the variable's name in front.
"""

from __future__ import annotations

import json
import math
from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator
from pydantic_settings import NoDecode

from configuration.allowlist import parse_allowlist


def parse_flag(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    lowered = str(raw).strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"must be true or false, got {raw!r}")


def parse_whole_number(raw: Any) -> int:
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    try:
        return int(str(raw).strip())
    except ValueError:
        raise ValueError(f"must be a whole number, got {raw!r}") from None


def parse_positive_int(raw: Any) -> int:
    number = parse_whole_number(raw)
    if number <= 0:
        raise ValueError(f"must be greater than 0, got {number}")
    return number


def parse_port(raw: Any) -> int:
    number = parse_whole_number(raw)
    if not 1 <= number <= 65535:
        raise ValueError(f"must be a port number from 1 to 65535, got {number}")
    return number


def parse_port_or_zero(raw: Any) -> int:
    number = parse_whole_number(raw)
    if not 0 <= number <= 65535:
        raise ValueError(f"must be a port number from 1 to 65535, or 0 for none, got {number}")
    return number


def parse_log_format(raw: Any) -> str:
    lowered = str(raw).strip().lower()
    if lowered not in ("text", "json"):
        raise ValueError(f"must be text or json, got {raw!r}")
    return lowered


def parse_seconds(raw: Any) -> timedelta | None:
    """A number of seconds; 0 or less means no limit."""
    if raw is None or isinstance(raw, timedelta):
        return raw
    try:
        seconds = float(str(raw).strip())
    except ValueError:
        raise ValueError(f"must be a number of seconds, got {raw!r}") from None
    if not math.isfinite(seconds) or seconds > timedelta.max.total_seconds():
        raise ValueError(f"must be a finite number of seconds (0 for no limit), got {raw!r}")
    return timedelta(seconds=seconds) if seconds > 0 else None


def parse_whole_number_or_off(raw: Any) -> int:
    """A whole number, 0 meaning no limit."""
    number = parse_whole_number(raw)
    if number < 0:
        raise ValueError(f"must be 0 (no limit) or more, got {number}")
    return number


def parse_comma_list(raw: Any) -> tuple[str, ...]:
    """`a, b` from the environment, or a list from the TOML file; blanks dropped."""
    items = raw.split(",") if isinstance(raw, str) else raw
    if not isinstance(items, list | tuple) or not all(isinstance(item, str) for item in items):
        raise ValueError(f"must be comma-separated text (or a list of strings in the file), got {raw!r}")
    return tuple(item.strip() for item in items if item.strip())


def parse_comma_list_or_unset(raw: Any) -> tuple[str, ...] | None:
    return None if raw is None else parse_comma_list(raw) or None


def parse_positive_seconds(raw: Any) -> float:
    try:
        seconds = float(str(raw).strip())
    except ValueError:
        raise ValueError(f"must be a number of seconds, got {raw!r}") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"must be a number of seconds greater than 0, got {raw!r}")
    return seconds


def parse_outbound_allow(raw: Any) -> tuple[str, ...]:
    entries = parse_comma_list(raw)
    parse_allowlist(entries)  # raises ValueError naming the bad entry
    return entries


def parse_headers_by_url(raw: Any) -> dict[str, dict[str, str]]:
    """A JSON object (environment) or a table (file) of URL → {header name: value}."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            raise ValueError(f"is not valid JSON: {exc}") from None
    if not isinstance(raw, dict) or not all(
        isinstance(headers, dict) and all(isinstance(v, str) for v in headers.values()) for headers in raw.values()
    ):
        raise ValueError('must map endpoint URLs to headers: {"<url>": {"<name>": "<value>"}}')
    return raw


RETENTION_KINDS = (
    "responses",
    "conversations",
    "sessions",
    "turns",
    "compactions",
    "webhook_deliveries",
    "files",
    "vector_stores",
)
"""The kinds store/retention.py registers, then store/knowledge/retention.py's; a kind added there is added here."""


def parse_retention(raw: Any) -> dict[str, timedelta]:
    """`kind=seconds,…` from the environment (a table of kind = seconds in the file); 0 or less: kept forever."""
    if isinstance(raw, str):
        pairs = [item.partition("=") for item in raw.split(",") if item.strip()]
        if any(not separator for _, separator, _ in pairs):
            raise ValueError(f"must be kind=seconds pairs separated by commas, got {raw!r}")
        raw = {kind.strip(): value for kind, _, value in pairs}
    if not isinstance(raw, dict):
        raise ValueError(f"must be kind=seconds pairs separated by commas, got {raw!r}")
    unknown = sorted(set(raw) - set(RETENTION_KINDS))
    if unknown:
        raise ValueError(f"names unknown kinds {unknown}; known: {', '.join(RETENTION_KINDS)}")
    ttls = {kind: parse_seconds(value) for kind, value in raw.items()}
    return {kind: ttl for kind, ttl in ttls.items() if ttl is not None}


def parse_seconds_list(raw: Any) -> tuple[float, ...]:
    """Comma-separated seconds (a TOML list too), each a finite number >= 0."""
    entries = raw if isinstance(raw, list | tuple) else str(raw).split(",")
    delays: list[float] = []
    for entry in entries:
        try:
            seconds = float(str(entry).strip())
        except ValueError:
            raise ValueError(f"must be comma-separated numbers of seconds, got {entry!r} in {raw!r}") from None
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"must be comma-separated numbers of seconds >= 0, got {entry!r}")
        delays.append(seconds)
    return tuple(delays)


WEBHOOK_RETRY_DELAYS = (5.0, 300.0, 1800.0, 7200.0, 18000.0, 36000.0, 36000.0, 36000.0, 36000.0, 43200.0, 43200.0)
"""Standard Webhooks' schedule (5 s, 5 min, 30 min, 2 h, 5 h, then 10 h) stretched to about 72 hours."""


Flag = Annotated[bool, BeforeValidator(parse_flag)]
PositiveInt = Annotated[int, BeforeValidator(parse_positive_int)]
LimitOrOff = Annotated[int, BeforeValidator(parse_whole_number_or_off)]
Port = Annotated[int, BeforeValidator(parse_port)]
PortOrZero = Annotated[int, BeforeValidator(parse_port_or_zero)]
LogFormat = Annotated[Literal["text", "json"], BeforeValidator(parse_log_format)]
Seconds = Annotated[timedelta | None, BeforeValidator(parse_seconds)]
CommaList = Annotated[tuple[str, ...], NoDecode, BeforeValidator(parse_comma_list)]
PositiveSeconds = Annotated[float, BeforeValidator(parse_positive_seconds)]
