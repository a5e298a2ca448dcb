"""Figures side by side: ours, the peer's, their ratio and the target the ratio must meet, as JSON lines."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Target:
    """A figure compared by ratio ours / peer: at most `bound` (latency) or at least `bound` (throughput)."""

    figure: str
    path: tuple[str, ...]
    unit: str
    op: str
    bound: float
    errors_path: tuple[str, ...] | None = None
    """Where the count of our errors is, when the target also asks for 0 errors."""


RESPONSES_TARGETS = (
    Target("responses_non_streamed_p50", ("non_streamed_ms", "p50"), "ms", "<=", 1.25),
    Target("responses_first_delta_p50_0ms_model", ("first_delta_ms", "p50"), "ms", "<=", 2.0),
    Target("responses_first_delta_p50_ttft100", ("first_delta_ttft100_ms", "p50"), "ms", "<=", 1.10),
    Target(
        "responses_20_clients_throughput", ("concurrent", "per_s"), "responses/s", ">=", 1.0, ("concurrent", "errors")
    ),
)
LLAMA_STACK_TARGETS = (
    Target("llama_stack_simple_turn_p50", ("simple_turn_ms", "p50"), "ms", "<=", 0.76),
    Target("llama_stack_tool_turn_p50", ("tool_turn_ms", "p50"), "ms", "<=", 0.68),
    Target(
        "llama_stack_20x10_tool_turns_throughput",
        ("throughput", "per_s"),
        "turns/s",
        ">=",
        1.23,
        ("throughput", "errors"),
    ),
    Target("llama_stack_first_text_delta_p50_ttft100", ("first_text_delta_ms", "p50"), "ms", "<=", 0.75),
)
WEBSOCKET_TARGETS = (
    Target("websocket_sequential_p50", ("ws_sequential_ms", "p50"), "ms", "<=", 1.0),
    Target(
        "websocket_20_sockets_throughput",
        ("ws_concurrent", "per_s"),
        "responses/s",
        ">=",
        1.0,
        ("ws_concurrent", "errors"),
    ),
)
KNOWLEDGE_TARGETS = (
    Target("knowledge_ingest_chunks_per_s", ("ingest", "chunks_per_s"), "chunks/s", ">=", 2.0),
    Target("knowledge_search_p50", ("search_ms", "p50"), "ms", "<=", 1.0),
)


def _at(figures: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = figures
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def compare(
    targets: tuple[Target, ...], peer: str, ours: dict[str, Any], theirs: dict[str, Any], context: dict[str, Any]
) -> list[dict[str, Any]]:
    """One row per target; `met` is None when either side has no figure (it failed: see its errors)."""
    rows = []
    for target in targets:
        mine, peer_value = _at(ours, target.path), _at(theirs, target.path)
        ratio = round(mine / peer_value, 2) if mine is not None and peer_value else None
        met = None if ratio is None else (ratio <= target.bound if target.op == "<=" else ratio >= target.bound)
        row: dict[str, Any] = {
            "figure": target.figure,
            "peer": peer,
            "unit": target.unit,
            "ours": mine,
            "theirs": peer_value,
            "ratio": ratio,
            "target": f"ours/{peer} {target.op} {target.bound:g}",
        }
        if target.errors_path is not None:
            row["errors"] = {"ours": _at(ours, target.errors_path), "theirs": _at(theirs, target.errors_path)}
            row["target"] += ", 0 errors"
            met = met and row["errors"]["ours"] == 0 if met is not None else None
        row["met"] = met
        row["loadavg_1m"] = {"ours": ours.get("loadavg_1m"), "theirs": theirs.get("loadavg_1m")}
        rows.append({**row, **context})
    return rows


def socket_against_http(peer: str, ours: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    """Our own first delta over an open socket against our own over HTTP (TTFT 100 ms model): a socket saves the
    request's set-up, so it must not be slower."""
    socket, http = _at(ours, ("ws_first_delta_ttft100_ms", "p50")), _at(ours, ("http_first_delta_ttft100_ms", "p50"))
    ratio = round(socket / http, 2) if socket is not None and http else None
    return {
        "figure": "websocket_first_delta_p50_against_our_http",
        "peer": peer,
        "unit": "ms",
        "ours_socket": socket,
        "ours_http": http,
        "ratio": ratio,
        "target": "socket / http <= 1",
        "met": None if ratio is None else ratio <= 1.0,
        **context,
    }


def print_rows(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        print(json.dumps(row, separators=(",", ":")), flush=True)
