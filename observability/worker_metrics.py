"""The worker's metrics: Temporal SDK metrics and ours, on one `/metrics`.

The SDK's Prometheus endpoint runs in its Rust core; we bind it to a loopback port of its own and
re-expose what it reports, at each scrape, through prometheus_client's registry, beside our metrics.
One port to scrape per worker (or the API's `/metrics`, when the API runs the worker), and the SDK's
metrics in Prometheus naming (seconds, `_total`).
"""

from __future__ import annotations

import logging
import socket
import urllib.request
from collections.abc import Iterator
from functools import cache

from prometheus_client import REGISTRY, start_http_server
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

log = logging.getLogger(__name__)


class TemporalSdkMetrics(Collector):
    def __init__(self, url: str) -> None:
        self._url = url

    def describe(self) -> list[Metric]:
        return []  # nothing to check at registration: the SDK's families are only known at scrape time

    def collect(self) -> Iterator[Metric]:
        try:
            with urllib.request.urlopen(self._url, timeout=2) as response:
                text = response.read().decode()
        except OSError as error:
            log.warning("Temporal SDK metrics unavailable: %s", error)
            return
        yield from text_string_to_metric_families(text)


def _free_loopback_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@cache
def sdk_metrics_runtime() -> Runtime:
    """The Temporal runtime whose SDK metrics this process's registry reports (one per process: each
    would bind a port and register its families again)."""
    sdk_address = f"127.0.0.1:{_free_loopback_port()}"
    runtime = Runtime(
        telemetry=TelemetryConfig(
            metrics=PrometheusConfig(
                bind_address=sdk_address, counters_total_suffix=True, unit_suffix=True, durations_as_seconds=True
            )
        )
    )
    REGISTRY.register(TemporalSdkMetrics(f"http://{sdk_address}/metrics"))
    return runtime


def serve_worker_metrics(host: str, port: int) -> Runtime:
    """Serve `/metrics` on host:port; returns the Temporal runtime the worker's client must use."""
    runtime = sdk_metrics_runtime()
    start_http_server(port, addr=host)
    log.info("worker metrics on http://%s:%d/metrics", host, port)
    return runtime
