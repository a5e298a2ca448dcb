"""Connecting to Temporal the way the `temporal` CLI does (temporalio envconfig)."""

from __future__ import annotations

import logging

from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.envconfig import ClientConfig
from temporalio.runtime import Runtime
from temporalio.service import RPCError, RPCStatusCode

from configuration.settings import Settings
from observability.tracing import temporal_interceptors
from workflows import search_attributes

log = logging.getLogger(__name__)


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


class MissingSearchAttributes(RuntimeError):
    pass


async def require_search_attributes(client: Client) -> None:
    """Fail at start-up, saying how to fix it, when the namespace lacks our search attributes."""
    try:
        response = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=client.namespace)
        )
    except RPCError as error:
        if error.status == RPCStatusCode.PERMISSION_DENIED:
            log.warning("cannot list search attributes (%s); assuming they exist", error.message)
            return
        raise
    present = {**response.custom_attributes, **response.system_attributes}
    missing = [key.name for key in search_attributes.ALL if key.name not in present]
    if missing:
        commands = "\n".join(
            f"  temporal operator search-attribute create --namespace {client.namespace} --name {name} "
            f"--type {search_attributes.TYPE_NAMES[name]}"
            for name in missing
        )
        raise MissingSearchAttributes(
            f"Namespace {client.namespace!r} lacks the search attributes {missing}, which turn workflows set. "
            f"Create them once:\n{commands}"
        )
