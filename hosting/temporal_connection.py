"""Connecting to Temporal the way the `temporal` CLI does (temporalio envconfig)."""

from __future__ import annotations

from typing import ClassVar

from temporalio.client import Client
from temporalio.contrib.pydantic import PydanticPayloadConverter
from temporalio.converter import CompositePayloadConverter, DataConverter, EncodingPayloadConverter
from temporalio.envconfig import ClientConfig
from temporalio.runtime import Runtime

from configuration.settings import Settings
from observability.tracing import temporal_interceptors


class _PydanticPayloads(PydanticPayloadConverter):
    """temporalio's pydantic payload converter, its encodings built once per process. The SDK builds a
    payload converter for every workflow activation and every context it serializes in; building the
    pydantic JSON encoding (a serializer, a type-adapter cache) each time cost ~0.1 ms. The encodings
    hold no state but that cache, which is thread-safe and only ever adds adapters."""

    _encodings: ClassVar[tuple[EncodingPayloadConverter, ...]] = ()

    def __init__(self) -> None:
        if _PydanticPayloads._encodings:
            CompositePayloadConverter.__init__(self, *_PydanticPayloads._encodings)
        else:
            super().__init__()
            _PydanticPayloads._encodings = tuple(self.converters.values())


DATA_CONVERTER = DataConverter(payload_converter_class=_PydanticPayloads)
"""`pydantic_data_converter`'s conversions, cheaper to instantiate (the payloads are the same bytes)."""


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
        **config, data_converter=DATA_CONVERTER, interceptors=temporal_interceptors(), runtime=runtime
    )
