"""Configuration from the environment: defaults, accepted spellings, and refusals that name the fix."""

from __future__ import annotations

import pytest

from settings import SettingsError, load_settings


def test_the_worker_runs_in_its_own_process_unless_asked() -> None:
    assert load_settings({}).worker_in_api is False
    assert load_settings({"DA_WORKER_IN_API": "true"}).worker_in_api is True
    assert load_settings({"DA_WORKER_IN_API": " Yes "}).worker_in_api is True
    assert load_settings({"DA_WORKER_IN_API": "0"}).worker_in_api is False


def test_a_flag_that_is_neither_true_nor_false_is_refused_by_name() -> None:
    with pytest.raises(SettingsError, match=r"DA_WORKER_IN_API must be true or false, got 'maybe'"):
        load_settings({"DA_WORKER_IN_API": "maybe"})


def test_log_format_and_worker_metrics_port() -> None:
    assert load_settings({}).log_format == "text"
    assert load_settings({"DA_LOG_FORMAT": " JSON "}).log_format == "json"
    assert load_settings({}).worker_metrics_port == 0
    assert load_settings({"DA_WORKER_METRICS_PORT": "9464"}).worker_metrics_port == 9464
    with pytest.raises(SettingsError, match=r"DA_LOG_FORMAT must be text or json, got 'xml'"):
        load_settings({"DA_LOG_FORMAT": "xml"})
    with pytest.raises(SettingsError, match=r"DA_WORKER_METRICS_PORT must be a port number, or 0 for none"):
        load_settings({"DA_WORKER_METRICS_PORT": "metrics"})
