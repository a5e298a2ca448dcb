"""Writes the settings tables of docs/configuration.md from the settings model, so the page cannot drift.

    make docs                                       # or: python -m configuration.reference
    python -m configuration.reference --check       # exit 1 when the page is out of date

Only the part between the page's `<!-- settings:begin -->` and `<!-- settings:end -->` markers is
generated: one row per field of `Settings` (its environment variable, its key in the TOML file, its
type, its default and its docstring), then the fields of a model spec and of a shield spec. The prose
around the markers is written by hand.
"""

from __future__ import annotations

import argparse
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from configuration.loading import FILE_KEYS, env_name
from configuration.model_specs import ModelSpec, ShieldSpec
from configuration.settings import ENV_PREFIX, Settings

ROOT = Path(__file__).resolve().parent.parent

PAGE = ROOT / "docs" / "configuration.md"
BEGIN = "<!-- settings:begin -->"
END = "<!-- settings:end -->"
REGENERATE = "make docs"
UNSET = "\N{EN DASH}"

# The page's sections, by field. A field in none of them (a new one) lands in the last section,
# so adding a setting never breaks the page; give it its place here.
SECTIONS: dict[str, tuple[str, ...]] = {
    "Where things are": ("config_file", "data_dir", "store_url", "api_host", "api_port"),
    "Temporal": (
        "temporal_address",
        "temporal_profile",
        "temporal_config_file",
        "task_queue",
        "temporal_port",
        "temporal_ui_port",
        "temporal_ui_url",
        "worker_in_api",
    ),
    "Models and shields": ("models", "shields", "offline_model"),
    "Turns": (
        "awaiting_input_timeout",
        "continue_as_new_after_events",
        "max_message_bytes",
        "max_history_bytes",
        "max_tool_output_chars",
        "max_infer_iters",
        "response_wait",
        "unstarted_turn_sweep",
    ),
    "Authentication and browsers": ("api_keys", "api_keys_file", "allowed_hosts", "allowed_origins"),
    "Limits": (
        "max_request_bytes",
        "page_limit_default",
        "page_limit_max",
        "rate_limit_per_minute",
        "rate_limit_burst",
        "max_streams_per_key",
        "max_sessions_per_agent",
        "max_turns_per_session",
        "max_toolgroups_per_tenant",
        "max_agents_per_tenant",
        "max_sessions_per_tenant",
        "max_automations_per_tenant",
    ),
    "Outbound requests and MCP servers": (
        "outbound_allow",
        "outbound_connect_timeout",
        "outbound_read_timeout",
        "max_document_bytes",
        "max_tool_reply_bytes",
        "tool_call_deadline",
        "tools_listing_deadline",
        "mcp_headers",
        "credentials_key",
    ),
    "Observability": ("log_format", "worker_metrics_host", "worker_metrics_port"),
    "Code sandbox": (
        "sandbox_cpu_seconds",
        "sandbox_wall_seconds",
        "sandbox_memory_mb",
        "sandbox_workspace_mb",
        "sandbox_file_size_mb",
        "sandbox_max_processes",
        "sandbox_output_bytes",
        "sandbox_python_env",
        "worker_host",
        "code_host_start_timeout",
    ),
}
OTHER = "Other settings"

# What a value must look like, by the parser a field's type runs (configuration/values.py).
TYPE_BY_PARSER = {
    "parse_flag": "boolean",
    "parse_positive_int": "integer > 0",
    "parse_whole_number_or_off": "integer ≥ 0 (0: no limit)",
    "parse_port": "port",
    "parse_port_or_zero": "port, or 0",
    "parse_log_format": "`text` or `json`",
    "parse_seconds": "seconds (0: none)",
    "parse_comma_list": "comma-separated list",
    "parse_comma_list_or_unset": "comma-separated list",
    "parse_positive_seconds": "seconds > 0",
    "parse_outbound_allow": "comma-separated hosts, addresses, CIDR ranges (`:port` optional)",
    "parse_headers_by_url": "JSON object: URL → headers",
}
TYPE_BY_NAME = {
    "models": "JSON object: id → model spec",
    "shields": "JSON object: id → shield spec",
    "pricing": "JSON object: input, output (numbers)",
}
PLAIN_TYPES: dict[Any, str] = {
    str: "text",
    int: "integer",
    float: "number",
    bool: "boolean",
    Path: "path",
    list[str]: "list of text",
}
# Defaults a validator derives from other settings, or that `make run` (serve.py) changes.
DERIVED_DEFAULTS = {
    "store_url": "`sqlite+aiosqlite:///<data dir>/store.db`",
    "offline_model": "`true` without models, else `false`",
    "worker_in_api": "`false` (`make run`: `true`)",
}


def type_of(name: str, field: FieldInfo) -> str:
    if name in TYPE_BY_NAME:
        return TYPE_BY_NAME[name]
    for meta in field.metadata:
        parser = getattr(getattr(meta, "func", None), "__name__", None)
        if parser in TYPE_BY_PARSER:
            return TYPE_BY_PARSER[parser]
    annotation: Any = field.annotation
    optional = type(None) in get_args(annotation)  # X | None
    if optional:
        annotation = next(arg for arg in get_args(annotation) if arg is not type(None))
    if get_origin(annotation) is Literal:
        return " or ".join(f"`{value}`" for value in get_args(annotation))
    text = PLAIN_TYPES.get(annotation) or getattr(annotation, "__name__", None) or str(annotation)
    return f"{text} (optional)" if optional else text


def default_of(field: FieldInfo) -> str:
    """The default as one would write it in the environment; UNSET when unset (the description says what then)."""
    if field.default_factory is not None:
        value: Any = field.default_factory()  # type: ignore[call-arg]
    else:
        value = field.default
    if value is None or value == "" or value == () or value == {} or value == []:
        return UNSET
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, timedelta):
        value = value.total_seconds()
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, tuple | list):
        return f"`{','.join(map(str, value))}`"
    if isinstance(value, int) and value >= 1024 and value % 1024 == 0:
        return f"`{value}` ({binary_size(value)})"
    return f"`{value}`"


def binary_size(value: int) -> str:
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if value % size == 0:
            return f"{value // size} {unit}"
    return str(value)


def cell(text: str | None) -> str:
    """A docstring as one table cell: lines joined, pipes escaped."""
    return " ".join((text or "").split()).replace("|", "\\|")


def description_of(field: FieldInfo) -> str:
    text = cell(field.description)
    if field.repr is False:
        text += " Secret: never logged or shown."
    return text


def settings_rows(names: tuple[str, ...]) -> list[str]:
    key_by_field = {field: key for key, field in FILE_KEYS.items()}
    rows = ["| variable | file key | type | default | description |", "|---|---|---|---|---|"]
    for name in names:
        field = Settings.model_fields[name]
        variable = env_name(name)
        key = key_by_field.get(name)
        if name in ("models", "shields"):
            key_text = f'`[{name}."<id>"]` tables'
        elif key:
            key_text = f"`{key}`"
        elif variable.startswith(ENV_PREFIX):
            key_text = f"{UNSET} (environment only)"
        else:
            key_text = f"{UNSET} (temporalio's own file)"
        default = DERIVED_DEFAULTS.get(name) or default_of(field)
        rows.append(f"| `{variable}` | {key_text} | {type_of(name, field)} | {default} | {description_of(field)} |")
    return rows


def spec_rows(model: type[BaseModel]) -> list[str]:
    rows = ["| key | type | default | description |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        default = "required" if field.is_required() else default_of(field)
        rows.append(f"| `{name}` | {type_of(name, field)} | {default} | {description_of(field)} |")
    return rows


def sections() -> dict[str, tuple[str, ...]]:
    """SECTIONS without names the model lacks, plus the fields no section names."""
    placed = {name for names in SECTIONS.values() for name in names}
    known = {title: tuple(n for n in names if n in Settings.model_fields) for title, names in SECTIONS.items()}
    rest = tuple(name for name in Settings.model_fields if name not in placed)
    return {**known, **({OTHER: rest} if rest else {})}


def generated() -> str:
    """The text between the markers."""
    lines = [
        "",
        "<!-- Generated by configuration/reference.py from the settings model;"
        f" edit the model, then `{REGENERATE}`. -->",
        "",
    ]
    for title, names in sections().items():
        lines += [f"### {title}", "", *settings_rows(names), ""]
    lines += ["### A model spec", "", cell(ModelSpec.__doc__), "", *spec_rows(ModelSpec), ""]
    lines += ["### A shield spec", "", cell(ShieldSpec.__doc__), "", *spec_rows(ShieldSpec), ""]
    return "\n".join(lines)


def render(page: str) -> str:
    """The page with its generated part replaced."""
    head, found, rest = page.partition(BEGIN)
    _, found_end, tail = rest.partition(END)
    if not found or not found_end:
        raise SystemExit(f"{PAGE} lacks the markers {BEGIN} … {END} around its settings tables")
    return f"{head}{BEGIN}\n{generated()}\n{END}{tail}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the page is out of date; write nothing")
    check = parser.parse_args().check
    current = PAGE.read_text()
    wanted = render(current)
    if check:
        if wanted != current:
            print(f"{PAGE.relative_to(ROOT)} is out of date with the settings model: run `{REGENERATE}`")
            return 1
        return 0
    if wanted != current:
        PAGE.write_text(wanted)
        print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
