"""Prometheus metrics of webhook deliveries (per process; the oldest pending one is counted in the store
at each scrape of the API's /metrics). Labels are event types: a fixed set."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

DELIVERIES_SENT = Counter(
    "durable_agents_webhook_deliveries_sent", "Webhook deliveries a receiver accepted (2xx)", ["event_type"]
)
DELIVERIES_FAILED = Counter(
    "durable_agents_webhook_deliveries_failed",
    "Webhook deliveries given up after the last attempt of the retry schedule",
    ["event_type"],
)
DELIVERY_RETRIES = Counter(
    "durable_agents_webhook_delivery_retries",
    "Webhook attempts that failed with another attempt scheduled",
    ["event_type"],
)


def oldest_pending_exposition(age_seconds: float) -> bytes:
    registry = CollectorRegistry()
    gauge = Gauge(
        "durable_agents_webhook_oldest_pending_seconds",
        "Age of the oldest webhook delivery not yet delivered or given up, across all processes (0: none)",
        registry=registry,
    )
    gauge.set(age_seconds)
    return generate_latest(registry)
