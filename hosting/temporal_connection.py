"""Connecting to Temporal the way the `temporal` CLI does (temporalio envconfig)."""

from __future__ import annotations

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.envconfig import ClientConfig
from temporalio.runtime import Runtime

from configuration.settings import Settings
from observability.tracing import temporal_interceptors


async def connect_temporal(settings: Settings, runtime: Runtime | None = None) -> Client:
    """A client for the configured address, namespace, TLS and API key; localhost:7233 by default.

    With tracing on, its calls and the workers built on it carry the trace context (see observability/)."""
    config = ClientConfig.load_client_connect_config(
        profile=settings.temporal_profile, config_file=settings.temporal_config_file
    )
    if settings.temporal_address:
        config["target_host"] = settings.temporal_address
    config.setdefault("target_host", f"127.0.0.1:{settings.temporal_port}")
    return await Client.connect(
        **config, data_converter=pydantic_data_converter, interceptors=temporal_interceptors(), runtime=runtime
    )
