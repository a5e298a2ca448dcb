"""All configuration in one place: environment variables, optionally a TOML file.

Temporal's connection follows temporalio's envconfig conventions (TEMPORAL_ADDRESS,
TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS*, TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE),
so a profile that works with the `temporal` CLI works here. Everything of ours is prefixed
`DA_`. Provider API keys are never values here: a model names the *environment variable*
holding its key, which only the worker reads.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cache
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

OFFLINE_MODEL_ID = "offline/echo"
DEFAULT_MAX_REQUEST_BYTES = 1024 * 1024
DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024
DEFAULT_MAX_HISTORY_BYTES = 1024 * 1024
DEFAULT_MAX_TOOL_OUTPUT_CHARS = 256 * 1024
MESSAGE_BYTES_CEILING = 1_400_000
"""Tool results travel in a Temporal update (2 MB payload limit): a turn's input may not exceed this."""


class ModelSpec(BaseModel):
    """How to reach one model id that agents may name."""

    model_config = ConfigDict(extra="forbid")

    provider: Literal["openai", "offline"]
    base_url: str | None = None
    """The OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 for Ollama."""
    api_key_env: str | None = None
    """Name of the environment variable (read by the worker) that holds the API key."""
    provider_model: str | None = None
    """The model name the provider knows, when it differs from the id agents use."""
    timeout_seconds: float = Field(default=120.0, gt=0)


class ShieldSpec(BaseModel):
    """A shield agents may name in input_shields / output_shields (see providers/shields.py)."""

    model_config = ConfigDict(extra="forbid")

    provider: Literal["regex", "llama_guard"]
    patterns: list[str] = Field(default_factory=list)
    """For `regex`: a violation when any matches."""
    model: str | None = None
    """For `llama_guard`: the configured model id of the guard model."""
    violation_message: str = "I can't answer that. Can I help with something else?"


class SettingsError(ValueError):
    """A configuration value is wrong; the message says which and how to fix it."""


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    store_url: str
    task_queue: str
    temporal_address: str | None
    temporal_profile: str | None
    temporal_config_file: str | None
    models: dict[str, ModelSpec] = field(default_factory=dict)
    shields: dict[str, ShieldSpec] = field(default_factory=dict)
    awaiting_input_timeout: timedelta | None = None
    """How long a paused turn waits for client tool results before it expires; None: forever."""
    continue_as_new_after_events: int = 4000
    """History length at which a long turn continues as a new workflow run."""
    api_host: str = "127.0.0.1"
    api_port: int = 8321
    temporal_port: int = 7233
    temporal_ui_port: int = 8233
    api_keys: tuple[str, ...] = field(default=(), repr=False)
    """Bearer tokens the API accepts; empty: the API needs none. Kept out of repr so logs never show them."""
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    """Larger request bodies are refused with 413 before they are read."""
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    """The most text one turn takes in: a create's messages, or a resume's tool results, in total (413)."""
    max_history_bytes: int = DEFAULT_MAX_HISTORY_BYTES
    """How much of a session's earlier turns (stored JSON, newest first) a model call is given."""
    max_tool_output_chars: int = DEFAULT_MAX_TOOL_OUTPUT_CHARS
    """Tool results (server or client) longer than this are cut, with a marker."""
    worker_in_api: bool = False
    """The API process also runs a worker and starts turns on it eagerly: the first workflow task
    comes back in the start call's reply. One process instead of two, but one core for both."""

    def model(self, model_id: str) -> ModelSpec | None:
        return self.models.get(model_id)


def _read_file(path: str | None) -> dict[str, Any]:
    if not path:
        return {}
    try:
        return tomllib.loads(Path(path).read_text())
    except FileNotFoundError as exc:
        raise SettingsError(f"DA_CONFIG_FILE points to {path}, which does not exist") from exc
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path} is not valid TOML: {exc}") from exc


Spec = TypeVar("Spec", ModelSpec, ShieldSpec)


def _parse_specs(kind: type[Spec], raw: dict[str, Any], origin: str) -> dict[str, Spec]:
    """Validate a table of model or shield specs, naming the bad entry and where it came from."""
    specs: dict[str, Spec] = {}
    noun = "model" if kind is ModelSpec else "shield"
    for spec_id, spec in raw.items():
        try:
            specs[spec_id] = kind.model_validate(spec)
        except ValidationError as exc:
            raise SettingsError(f"{noun} {spec_id!r} in {origin} is invalid: {exc}") from exc
    return specs


def _parse_models(raw: dict[str, Any], origin: str) -> dict[str, ModelSpec]:
    models = _parse_specs(ModelSpec, raw, origin)
    for model_id, model in models.items():
        if model.provider == "openai" and not model.base_url:
            raise SettingsError(f"model {model_id!r} in {origin} needs a base_url")
    return models


def _seconds(raw: str, name: str) -> timedelta | None:
    try:
        seconds = float(raw)
    except ValueError as exc:
        raise SettingsError(f"{name} must be a number of seconds, got {raw!r}") from exc
    return timedelta(seconds=seconds) if seconds > 0 else None


def _positive_int(raw: str, name: str) -> int:
    try:
        number = int(raw)
    except ValueError as exc:
        raise SettingsError(f"{name} must be a whole number, got {raw!r}") from exc
    if number <= 0:
        raise SettingsError(f"{name} must be greater than 0, got {number}")
    return number


def _message_bytes(raw: str) -> int:
    number = _positive_int(raw, "DA_MAX_MESSAGE_BYTES")
    if number > MESSAGE_BYTES_CEILING:
        raise SettingsError(
            f"DA_MAX_MESSAGE_BYTES must be at most {MESSAGE_BYTES_CEILING} (client tool results travel in one "
            f"Temporal payload, limited to 2 MB), got {number}"
        )
    return number


def _flag(raw: str, name: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"{name} must be true or false, got {raw!r}")


def load_settings(env: dict[str, str] | None = None) -> Settings:
    env = dict(os.environ if env is None else env)
    file = _read_file(env.get("DA_CONFIG_FILE"))
    section: dict[str, Any] = file.get("durable_agents", {})

    def value(name: str, default: str) -> str:
        return env.get(f"DA_{name.upper()}") or str(section.get(name, default))

    data_dir = Path(value("data_dir", ".data")).resolve()
    models: dict[str, ModelSpec] = {OFFLINE_MODEL_ID: ModelSpec(provider="offline")}
    models.update(_parse_models(file.get("models", {}), env.get("DA_CONFIG_FILE", "the config file")))
    if env.get("DA_MODELS"):
        try:
            raw = json.loads(env["DA_MODELS"])
        except ValueError as exc:
            raise SettingsError(f"DA_MODELS is not valid JSON: {exc}") from exc
        models.update(_parse_models(raw, "DA_MODELS"))
    shields = _parse_specs(ShieldSpec, file.get("shields", {}), "the config file")
    if env.get("DA_SHIELDS"):
        try:
            shields.update(_parse_specs(ShieldSpec, json.loads(env["DA_SHIELDS"]), "DA_SHIELDS"))
        except ValueError as exc:
            raise SettingsError(f"DA_SHIELDS is not valid: {exc}") from exc
    for shield_id, shield in shields.items():
        if shield.provider == "llama_guard" and shield.model not in models:
            raise SettingsError(f"shield {shield_id!r} names model {shield.model!r}, which is not configured")
    return Settings(
        data_dir=data_dir,
        store_url=value("store_url", f"sqlite+aiosqlite:///{data_dir / 'store.db'}"),
        task_queue=value("task_queue", "durable-agents"),
        temporal_address=env.get("TEMPORAL_ADDRESS"),
        temporal_profile=env.get("TEMPORAL_PROFILE"),
        temporal_config_file=env.get("TEMPORAL_CONFIG_FILE"),
        models=models,
        shields=shields,
        awaiting_input_timeout=_seconds(value("awaiting_input_timeout", "0"), "DA_AWAITING_INPUT_TIMEOUT"),
        continue_as_new_after_events=int(value("continue_as_new_events", "4000")),
        api_host=value("api_host", "127.0.0.1"),
        api_port=int(value("api_port", "8321")),
        temporal_port=int(value("temporal_port", "7233")),
        temporal_ui_port=int(value("temporal_ui_port", "8233")),
        api_keys=tuple(key.strip() for key in value("api_keys", "").split(",") if key.strip()),
        max_request_bytes=_positive_int(
            value("max_request_bytes", str(DEFAULT_MAX_REQUEST_BYTES)), "DA_MAX_REQUEST_BYTES"
        ),
        worker_in_api=_flag(value("worker_in_api", "false"), "DA_WORKER_IN_API"),
        max_message_bytes=_message_bytes(value("max_message_bytes", str(DEFAULT_MAX_MESSAGE_BYTES))),
        max_history_bytes=_positive_int(
            value("max_history_bytes", str(DEFAULT_MAX_HISTORY_BYTES)), "DA_MAX_HISTORY_BYTES"
        ),
        max_tool_output_chars=_positive_int(
            value("max_tool_output_chars", str(DEFAULT_MAX_TOOL_OUTPUT_CHARS)), "DA_MAX_TOOL_OUTPUT_CHARS"
        ),
    )


@cache
def get_settings() -> Settings:
    return load_settings()
