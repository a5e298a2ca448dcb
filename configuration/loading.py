"""Reading `Settings` from the environment and the TOML file named by `DA_CONFIG_FILE`, with errors that name
where each bad value came from (the variable, or the file's key)."""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails
from pydantic_settings import BaseSettings, EnvSettingsSource, InitSettingsSource

from configuration.settings import ENV_PREFIX, FILE_SECTION, Settings, SettingsError


def env_name(field_name: str) -> str:
    """The environment variable a field is read from."""
    alias = Settings.model_fields[field_name].validation_alias
    return alias if isinstance(alias, str) else f"{ENV_PREFIX}{field_name.upper()}"


SPEC_TABLES = ("models", "shields")
# Settings of the [durable_agents] section, by their key there: the variable's name without DA_ in
# lower case. Not the file itself, nor Temporal's connection, which temporalio's own config file
# (TEMPORAL_CONFIG_FILE) holds; models and shields are tables of their own.
FILE_KEYS = {
    env_name(name).removeprefix(ENV_PREFIX).lower(): name
    for name in Settings.model_fields
    if env_name(name).startswith(ENV_PREFIX) and name not in ("config_file", *SPEC_TABLES)
}


class MappingEnvSource(EnvSettingsSource):
    """pydantic-settings' environment source over a given mapping instead of os.environ."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        self._environ = environ
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        # The hook pydantic-settings' own dotenv source overrides; a test proves os.environ stays out.
        return {
            name.lower(): value for name, value in self._environ.items() if value != "" or not self.env_ignore_empty
        }


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise SettingsError(f"DA_CONFIG_FILE points to {path}, which does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"DA_CONFIG_FILE points to {path}, which cannot be read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path} (DA_CONFIG_FILE) is not valid TOML: {exc}") from None


class TomlFileSource(InitSettingsSource):
    """The TOML file: the [durable_agents] section's keys plus the [models] and [shields] tables.

    Unknown keys are refused rather than ignored, so a misspelt setting does not silently keep its default.
    """

    def __init__(self, settings_cls: type[BaseSettings], path: Path) -> None:
        data = _read_toml(path)
        section = data.get(FILE_SECTION, {})
        if not isinstance(section, dict):
            raise SettingsError(
                f"{path} (DA_CONFIG_FILE): {FILE_SECTION} must be a table: [{FILE_SECTION}] above its keys"
            )
        unknown = sorted(set(data) - {FILE_SECTION, *SPEC_TABLES}) + sorted(
            f"{FILE_SECTION}.{key}" for key in set(section) - set(FILE_KEYS)
        )
        if unknown:
            raise SettingsError(
                f"{path} (DA_CONFIG_FILE) has unknown keys {unknown}; it takes the tables [{FILE_SECTION}], "
                f"[models] and [shields], and in [{FILE_SECTION}] the keys {sorted(FILE_KEYS)}"
            )
        values = {FILE_KEYS[key]: value for key, value in section.items()}
        values.update({table: data[table] for table in SPEC_TABLES if table in data})
        super().__init__(settings_cls, values)


def _spec_table(raw: str, variable: str) -> dict[str, Any]:
    """DA_MODELS / DA_SHIELDS: a JSON object of id → spec."""
    try:
        table = json.loads(raw)
    except ValueError as exc:
        raise SettingsError(f"{variable} is not valid JSON: {exc}") from None
    if not isinstance(table, dict):
        raise SettingsError(f"{variable} must be a JSON object of id → spec, got {raw!r}")
    return table


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Settings from `env` (os.environ when None, and only `env` when given) and the TOML file it names.

    Raises SettingsError naming the variable (or the file's key), what was wrong, and what it takes.
    """
    from_env = MappingEnvSource(Settings, os.environ if env is None else env)()
    for table in SPEC_TABLES:
        if table in from_env:
            from_env[table] = _spec_table(from_env[table], env_name(table))
    config_file = from_env.get("config_file")
    from_file = TomlFileSource(Settings, Path(config_file))() if config_file else {}
    values = {**from_file, **from_env}
    for table in SPEC_TABLES:
        if isinstance(from_file.get(table), dict) and table in from_env:
            values[table] = {**from_file[table], **from_env[table]}  # the environment wins per id
    try:
        return Settings(**values)
    except ValidationError as exc:
        origin = _Origin(from_env, config_file)
        raise SettingsError("\n".join(origin.explain(error) for error in exc.errors())) from None


class _Origin:
    """Turns pydantic's errors into sentences naming where the bad value came from."""

    def __init__(self, from_env: Mapping[str, Any], config_file: str | None) -> None:
        self.from_env = from_env
        self.config_file = config_file
        fields = Settings.model_fields
        self.field_by_key = {name: name for name in fields} | {
            alias: name for name, field in fields.items() if isinstance(alias := field.validation_alias, str)
        }

    def where(self, loc: tuple[int | str, ...]) -> str | None:
        name = self.field_by_key.get(str(loc[0])) if loc else None
        if name is None:
            return None
        if name in SPEC_TABLES and len(loc) > 1:
            came_from = env_name(name) if loc[1] in self.from_env.get(name, {}) else f"{self.config_file} [{name}]"
            return f"{name.removesuffix('s')} {loc[1]!r} in {came_from}"
        if str(loc[0]) in self.from_env:
            return env_name(name)
        if name in SPEC_TABLES:
            return f"[{name}] of {self.config_file}"
        key = env_name(name).removeprefix(ENV_PREFIX).lower()
        return f"{key} in [{FILE_SECTION}] of {self.config_file} ({env_name(name)})"

    def explain(self, error: ErrorDetails) -> str:
        loc = error["loc"]
        if error["type"] == "value_error" and "error" in error.get("ctx", {}):
            what, separator = str(error["ctx"]["error"]), " "
        else:
            what, separator = error["msg"], ": "
            if error["type"] != "missing":
                what += f", got {error['input']!r}"
        where = self.where(loc)
        if where is None:
            return what
        inner = ".".join(str(part) for part in loc[2 if loc[0] in SPEC_TABLES else 1 :])
        return f"{where}: {inner}: {what}" if inner else f"{where}{separator}{what}"


@cache
def get_settings() -> Settings:
    return load_settings()
