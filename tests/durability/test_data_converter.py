"""The data converter our clients and workers use writes the very payloads temporalio's
`pydantic_data_converter` writes, and reads them back, in every converter the SDK builds from it
(one per activation and serialization context): histories written by either replay with the other."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from temporalio.contrib.pydantic import pydantic_data_converter

from domain.content import CompletionMessage, ToolCall
from hosting.temporal_connection import DATA_CONVERTER
from workflows.contracts import InferenceResult, TurnFinished


def test_payloads_are_pydantic_data_converters_and_read_back_in_every_copy() -> None:
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    message = CompletionMessage(
        content="hi", stop_reason="end_of_turn", tool_calls=[ToolCall(call_id="c", tool_name="t", arguments={"a": 1})]
    )
    values = [
        InferenceResult(message=message, finished=TurnFinished(step_completed_at=at, completed_at=at)),
        {"k": [1]},
        None,
        b"raw",
        "text",
    ]
    payloads = DATA_CONVERTER.payload_converter.to_payloads(values)
    assert payloads == pydantic_data_converter.payload_converter.to_payloads(values)
    for copy in (dataclasses.replace(DATA_CONVERTER), dataclasses.replace(DATA_CONVERTER)):
        assert copy.payload_converter.from_payloads(payloads, [InferenceResult, dict, type(None), bytes, str]) == values
