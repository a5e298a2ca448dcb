"""Our search attributes in a namespace made before some of them existed: the embedded stack adds what
is missing at start; a worker or API against any other cluster stops at once with one message naming
each missing attribute and the command that creates it, instead of starting half-working (or, under a
supervisor, again and again)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from google.protobuf.duration_pb2 import Duration
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest
from temporalio.client import Client
from temporalio.common import SearchAttributeKey

from hosting.search_attribute_schema import (
    MissingSearchAttributes,
    add_missing_search_attributes,
    missing_search_attributes,
    require_search_attributes,
)
from hosting.supervision import EXIT_CANNOT_START
from tests.support.stack import Stack, free_port
from workflows import search_attributes

ROOT = Path(__file__).resolve().parents[2]


def _namespace_with(stack: Stack, *keys: SearchAttributeKey) -> str:
    """A new namespace holding only `keys` of ours, as one made by an earlier release does."""
    namespace = f"earlier-{uuid.uuid4().hex[:8]}"

    async def register() -> None:
        await stack.client.workflow_service.register_namespace(
            RegisterNamespaceRequest(namespace=namespace, workflow_execution_retention_period=Duration(seconds=86400))
        )
        if keys:
            await stack.client.operator_service.add_search_attributes(
                AddSearchAttributesRequest(
                    namespace=namespace,
                    search_attributes={
                        key.name: IndexedValueType.ValueType(key.indexed_value_type.value) for key in keys
                    },
                )
            )

    stack.background.run(register())
    return namespace


def _client(stack: Stack, namespace: str) -> Client:
    target = stack.client.service_client.config.target_host
    return stack.background.run(Client.connect(target, namespace=namespace))


def test_the_missing_ones_are_added_and_those_present_kept(stack: Stack) -> None:
    earlier = (search_attributes.AGENT_ID, search_attributes.SESSION_ID, search_attributes.TURN_STATUS)
    client = _client(stack, _namespace_with(stack, *earlier))
    with pytest.raises(MissingSearchAttributes):
        stack.background.run(require_search_attributes(client))

    added = stack.background.run(add_missing_search_attributes(client))

    assert added == ["TenantId", "ResponseId", "ConversationId", "AutomationId"]
    assert stack.background.run(missing_search_attributes(client)) == []
    stack.background.run(require_search_attributes(client))  # passes now
    assert stack.background.run(add_missing_search_attributes(client)) == []  # and again: nothing to do


def test_every_declared_attribute_has_a_type_the_cli_takes() -> None:
    cli_types = {"Keyword", "KeywordList", "Text", "Int", "Double", "Bool", "Datetime"}
    assert set(search_attributes.TYPE_NAMES) == {key.name for key in search_attributes.ALL}
    assert set(search_attributes.TYPE_NAMES.values()) <= cli_types
    assert search_attributes.TYPE_NAMES["ResponseId"] == "KeywordList"


def _start_against(stack: Stack, namespace: str, tmp_path: Path, command: list[str]) -> tuple[int, str, float]:
    env = {
        **{name: value for name, value in os.environ.items() if not name.startswith(("DA_", "TEMPORAL_"))},
        "TEMPORAL_ADDRESS": stack.client.service_client.config.target_host,
        "TEMPORAL_NAMESPACE": namespace,
        "DA_DATA_DIR": str(tmp_path),
    }
    started = time.monotonic()
    finished = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    return finished.returncode, finished.stdout + finished.stderr, time.monotonic() - started


@pytest.mark.parametrize(
    ("process", "command", "status"),
    [
        ("worker", [sys.executable, "worker.py"], EXIT_CANNOT_START),
        ("API", [sys.executable, "-m", "uvicorn", "api.app:app", "--port", str(free_port())], 3),
    ],
)
def test_against_another_cluster_a_start_stops_at_once_naming_each_attribute_and_its_command(
    stack: Stack, tmp_path: Path, process: str, command: list[str], status: int
) -> None:
    namespace = _namespace_with(stack, search_attributes.AGENT_ID)

    code, output, seconds = _start_against(stack, namespace, tmp_path, command)

    assert code == status, output
    assert seconds < 90  # at once: no retries, no waiting for what a restart would not change
    assert f"Temporal namespace {namespace!r} lacks the search attributes SessionId, TurnStatus" in output
    for key in search_attributes.ALL[1:]:
        create = (
            f"temporal operator search-attribute create --namespace {namespace} --name {key.name} "
            f"--type {search_attributes.TYPE_NAMES[key.name]}"
        )
        assert create in output, output
    assert "--name AgentId" not in output  # the one present is not asked for
    assert stack.background.run(missing_search_attributes(_client(stack, namespace))) == list(search_attributes.ALL[1:])
