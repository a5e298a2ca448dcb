"""Configuration from the environment and the TOML file: defaults, accepted spellings, precedence,
and refusals that name the variable, what was wrong and what it takes."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from configuration.loading import env_name, load_settings
from configuration.settings import OFFLINE_MODEL_ID, Settings, SettingsError

OPENAI_MODEL = {"provider": "openai", "base_url": "http://127.0.0.1:9/v1"}


def refusal(env: dict[str, str]) -> str:
    with pytest.raises(SettingsError) as refused:
        load_settings(env)
    return str(refused.value)


def test_defaults_without_any_variable() -> None:
    settings = load_settings({})
    assert settings.data_dir == Path(".data").resolve()
    assert settings.store_url == f"sqlite+aiosqlite:///{Path('.data').resolve() / 'store.db'}"
    assert settings.task_queue == "durable-agents"
    assert (settings.temporal_address, settings.temporal_profile, settings.temporal_config_file) == (None, None, None)
    assert list(settings.models) == [OFFLINE_MODEL_ID]
    assert settings.shields == {}
    assert settings.awaiting_input_timeout is None
    assert settings.continue_as_new_after_events == 4000
    assert (settings.api_host, settings.api_port) == ("127.0.0.1", 8321)
    assert (settings.temporal_port, settings.temporal_ui_port) == (7233, 8233)
    assert settings.api_keys == ()
    assert settings.max_request_bytes == 1024 * 1024
    assert (settings.max_message_bytes, settings.max_history_bytes) == (1024 * 1024, 1024 * 1024)
    assert settings.max_tool_output_chars == 256 * 1024
    assert settings.worker_in_api is False


def test_an_explicit_environment_is_the_only_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DA_TASK_QUEUE", "from-the-process")
    assert load_settings({}).task_queue == "durable-agents"
    assert load_settings().task_queue == "from-the-process"


def test_an_empty_variable_means_the_default() -> None:
    empty = load_settings({name: "" for name in map(env_name, Settings.model_fields)})
    assert empty == load_settings({})


def test_each_variable_is_read(tmp_path: Path) -> None:
    settings = load_settings(
        {
            "DA_DATA_DIR": str(tmp_path),
            "DA_TASK_QUEUE": "agents",
            "TEMPORAL_ADDRESS": "temporal.example:7233",
            "TEMPORAL_PROFILE": "cloud",
            "TEMPORAL_CONFIG_FILE": "/etc/temporal.toml",
            "DA_AWAITING_INPUT_TIMEOUT": "2.5",
            "DA_CONTINUE_AS_NEW_EVENTS": "400",
            "DA_API_HOST": "0.0.0.0",
            "DA_API_PORT": "9000",
            "DA_TEMPORAL_PORT": "9001",
            "DA_TEMPORAL_UI_PORT": "9002",
            "DA_API_KEYS": " k1, k2 ,,",
            "DA_MAX_REQUEST_BYTES": "1000",
        }
    )
    assert settings.data_dir == tmp_path
    assert settings.store_url == f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    assert settings.task_queue == "agents"
    assert settings.temporal_address == "temporal.example:7233"
    assert settings.temporal_profile == "cloud"
    assert settings.temporal_config_file == "/etc/temporal.toml"
    assert settings.awaiting_input_timeout == timedelta(seconds=2.5)
    assert settings.continue_as_new_after_events == 400
    assert (settings.api_host, settings.api_port) == ("0.0.0.0", 9000)
    assert (settings.temporal_port, settings.temporal_ui_port) == (9001, 9002)
    assert settings.api_keys == ("k1", "k2")
    assert settings.max_request_bytes == 1000
    assert load_settings({"DA_STORE_URL": "postgresql+asyncpg://u@h/db"}).store_url == "postgresql+asyncpg://u@h/db"


def test_the_web_search_key_stays_out_of_the_repr() -> None:
    settings = load_settings({"DA_WEB_SEARCH_ENGINE": "tavily", "DA_WEB_SEARCH_API_KEY": "tvly-secret-1"})
    assert settings.web_search_api_key == "tvly-secret-1" and "tvly-secret-1" not in repr(settings)


def test_api_keys_stay_out_of_the_repr() -> None:
    assert "s3cret" not in repr(load_settings({"DA_API_KEYS": "s3cret"}))


def test_the_credentials_key_is_a_fernet_key_kept_out_of_the_repr() -> None:
    key = Fernet.generate_key().decode()
    settings = load_settings({"DA_CREDENTIALS_KEY": key})
    assert settings.credentials_key == key and key not in repr(settings)
    assert load_settings({}).credentials_key is None
    assert refusal({"DA_CREDENTIALS_KEY": "not-a-key"}).startswith("DA_CREDENTIALS_KEY must be a Fernet key")


def test_a_timeout_of_zero_or_less_means_forever() -> None:
    assert load_settings({"DA_AWAITING_INPUT_TIMEOUT": "0"}).awaiting_input_timeout is None
    assert load_settings({"DA_AWAITING_INPUT_TIMEOUT": "-1"}).awaiting_input_timeout is None


def test_the_worker_runs_in_its_own_process_unless_asked() -> None:
    assert load_settings({}).worker_in_api is False
    assert load_settings({"DA_WORKER_IN_API": "true"}).worker_in_api is True
    assert load_settings({"DA_WORKER_IN_API": " Yes "}).worker_in_api is True
    assert load_settings({"DA_WORKER_IN_API": "0"}).worker_in_api is False


def test_models_and_shields_come_as_json_and_the_offline_model_steps_aside() -> None:
    settings = load_settings(
        {
            "DA_MODELS": json.dumps({"guard": {**OPENAI_MODEL, "api_key_env": "GUARD_KEY", "timeout_seconds": 5}}),
            "DA_SHIELDS": json.dumps(
                {
                    "words": {"provider": "regex", "patterns": ["bomb"]},
                    "lg": {"provider": "llama_guard", "model": "guard"},
                }
            ),
        }
    )
    assert set(settings.models) == {"guard"}  # configured models: no offline model unless asked for
    guard = settings.model("guard")
    assert guard is not None
    assert (guard.base_url, guard.api_key_env, guard.timeout_seconds) == (OPENAI_MODEL["base_url"], "GUARD_KEY", 5)
    assert settings.shields["words"].patterns == ["bomb"]
    assert settings.shields["lg"].model == "guard"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DA_WORKER_IN_API": "maybe"}, r"^DA_WORKER_IN_API must be true or false, got 'maybe'$"),
        ({"DA_MAX_REQUEST_BYTES": "4MB"}, r"^DA_MAX_REQUEST_BYTES must be a whole number, got '4MB'$"),
        ({"DA_MAX_REQUEST_BYTES": "0"}, r"^DA_MAX_REQUEST_BYTES must be greater than 0, got 0$"),
        ({"DA_CONTINUE_AS_NEW_EVENTS": "lots"}, r"^DA_CONTINUE_AS_NEW_EVENTS must be a whole number, got 'lots'$"),
        ({"DA_API_PORT": "http"}, r"^DA_API_PORT must be a whole number, got 'http'$"),
        ({"DA_TEMPORAL_PORT": "70000"}, r"^DA_TEMPORAL_PORT must be a port number from 1 to 65535, got 70000$"),
        ({"DA_TEMPORAL_UI_PORT": "-1"}, r"^DA_TEMPORAL_UI_PORT must be a port number from 1 to 65535, got -1$"),
        ({"DA_AWAITING_INPUT_TIMEOUT": "1h"}, r"^DA_AWAITING_INPUT_TIMEOUT must be a number of seconds, got '1h'$"),
        ({"DA_AWAITING_INPUT_TIMEOUT": "inf"}, r"^DA_AWAITING_INPUT_TIMEOUT must be a finite number of seconds"),
        ({"DA_MODELS": "{oops"}, r"^DA_MODELS is not valid JSON: Expecting property name"),
        ({"DA_MODELS": '["m"]'}, r"^DA_MODELS must be a JSON object of id → spec"),
        ({"DA_SHIELDS": "nope"}, r"^DA_SHIELDS is not valid JSON"),
        ({"DA_MODELS": '{"m": {"provider": "openai"}}'}, r"^model 'm' in DA_MODELS needs a base_url"),
        (
            {"DA_MODELS": '{"m": {"provider": "anthropic"}}'},
            r"^model 'm' in DA_MODELS: provider: Input should be 'openai' or 'offline', got 'anthropic'$",
        ),
        (
            {"DA_SHIELDS": '{"s": {"provider": "regex", "pattern": "x"}}'},
            r"^shield 's' in DA_SHIELDS: pattern: Extra inputs are not permitted",
        ),
        (
            {"DA_SHIELDS": '{"lg": {"provider": "llama_guard", "model": "guard"}}'},
            r"^shield 'lg' names model 'guard', which is not configured; add it to DA_MODELS",
        ),
        ({"DA_CONFIG_FILE": "/nonexistent/da.toml"}, r"^DA_CONFIG_FILE points to /nonexistent/da.toml, which does not"),
        ({"DA_WEB_SEARCH_ENGINE": "searxng"}, r"DA_WEB_SEARCH_ENGINE=searxng needs DA_WEB_SEARCH_URL"),
        ({"DA_WEB_SEARCH_ENGINE": "brave"}, r"DA_WEB_SEARCH_ENGINE=brave needs DA_WEB_SEARCH_API_KEY"),
        ({"DA_WEB_SEARCH_ENGINE": "bing"}, r"DA_WEB_SEARCH_ENGINE.*'searxng', 'brave' or 'tavily'"),
        (
            {"DA_WEB_SEARCH_ENGINE": "searxng", "DA_WEB_SEARCH_URL": "file:///etc/passwd"},
            r"DA_WEB_SEARCH_URL must be an http\(s\) URL",
        ),
    ],
)
def test_a_wrong_value_is_refused_by_name(env: dict[str, str], message: str) -> None:
    assert re.search(message, refusal(env)), refusal(env)


def test_every_wrong_value_is_reported_at_once() -> None:
    lines = refusal({"DA_API_PORT": "x", "DA_WORKER_IN_API": "maybe"}).splitlines()
    assert sorted(lines) == [
        "DA_API_PORT must be a whole number, got 'x'",
        "DA_WORKER_IN_API must be true or false, got 'maybe'",
    ]


def write_config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "da.toml"
    path.write_text(text)
    return str(path)


def test_the_config_file_sets_values_and_the_environment_wins(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        """
[durable_agents]
task_queue = "from-file"
continue_as_new_events = 10
api_keys = ["k1", " k2 "]
worker_in_api = true
awaiting_input_timeout = 3
max_request_bytes = 2048

[models."file-only"]
provider = "openai"
base_url = "http://127.0.0.1:9/file"

[models."both"]
provider = "openai"
base_url = "http://127.0.0.1:9/file"

[shields.words]
provider = "regex"
patterns = ["bomb"]
""",
    )
    settings = load_settings(
        {
            "DA_CONFIG_FILE": config,
            "DA_TASK_QUEUE": "from-env",
            "DA_MAX_REQUEST_BYTES": "",
            "DA_MODELS": json.dumps({"both": {**OPENAI_MODEL, "base_url": "http://127.0.0.1:9/env"}}),
        }
    )
    assert settings.task_queue == "from-env"
    assert settings.max_request_bytes == 2048  # an empty variable does not hide the file's value
    assert settings.continue_as_new_after_events == 10
    assert settings.api_keys == ("k1", "k2")
    assert settings.worker_in_api is True
    assert settings.awaiting_input_timeout == timedelta(seconds=3)
    assert set(settings.models) == {"file-only", "both"}
    assert settings.models["both"].base_url == "http://127.0.0.1:9/env"
    assert settings.shields["words"].patterns == ["bomb"]


def test_a_wrong_value_in_the_config_file_names_the_key_and_the_file(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        '[durable_agents]\nworker_in_api = "perhaps"\n[models.m]\nprovider = "openai"\n',
    )
    lines = refusal({"DA_CONFIG_FILE": config}).splitlines()
    assert (
        f"worker_in_api in [durable_agents] of {config} (DA_WORKER_IN_API) must be true or false, got 'perhaps'"
        in lines
    )
    assert any(line.startswith(f"model 'm' in {config} [models] needs a base_url") for line in lines)


def test_an_unknown_key_in_the_config_file_is_refused(tmp_path: Path) -> None:
    config = write_config(tmp_path, '[durable_agents]\ntask_queu = "typo"\n[model.x]\nprovider = "offline"\n')
    message = refusal({"DA_CONFIG_FILE": config})
    assert "unknown keys ['model', 'durable_agents.task_queu']" in message
    assert "'task_queue'" in message


def test_a_config_file_that_is_not_toml_is_refused(tmp_path: Path) -> None:
    config = write_config(tmp_path, "[durable_agents\n")
    assert refusal({"DA_CONFIG_FILE": config}).startswith(f"{config} (DA_CONFIG_FILE) is not valid TOML")


def test_log_format_and_worker_metrics_port() -> None:
    assert load_settings({}).log_format == "text"
    assert load_settings({"DA_LOG_FORMAT": " JSON "}).log_format == "json"
    assert load_settings({}).worker_metrics_port == 0
    assert load_settings({"DA_WORKER_METRICS_PORT": "9464"}).worker_metrics_port == 9464
    with pytest.raises(SettingsError, match=r"DA_LOG_FORMAT must be text or json, got 'xml'"):
        load_settings({"DA_LOG_FORMAT": "xml"})
    with pytest.raises(SettingsError, match=r"DA_WORKER_METRICS_PORT must be a whole number, got 'metrics'"):
        load_settings({"DA_WORKER_METRICS_PORT": "metrics"})
