"""The API against its own OpenAPI schema: schemathesis fuzzes every operation over real HTTP.

Bounded: a fixed number of cases per operation, derandomized, and no example database. Half the
schema-valid cases address an agent, session, turn, step, conversation and item that exist, so fuzzing gets
past the 404s of random ids into real sessions, turns and conversations.
"""

from __future__ import annotations

from functools import partial

import httpx
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import Case, GenerationMode

from tests.support.rest import create_agent, create_session
from tests.support.scripted_model import ScriptedModel
from tests.support.stack import Stack

CASES_PER_OPERATION = 20

# Operations whose schema-valid bodies can still name what this server does not have, refused with 400 by
# design: "valid data is accepted" (positive_data_acceptance) cannot hold for them. Every other check does.
CONFIGURATION_DEPENDENT = {
    "POST /v1/agents",  # agent_config.model must be configured; toolgroups registered; shields configured
    "POST /v1/agents/{agent_id}/session/{session_id}/turn",  # toolgroups must be registered
    "POST /v1/toolgroups",  # provider_id must be "model-context-protocol", which the schema does not say
    # Each call_id may be answered once, and a paused turn takes exactly its pending calls: rules a
    # JSON schema cannot state.
    "POST /v1/agents/{agent_id}/session/{session_id}/turn/{turn_id}/resume",
    # An item id may be given once per conversation.
    "POST /v1/conversations",
    "POST /v1/conversations/{conversation_id}/items",
    # The model must be configured, and an output must answer a call its context has.
    "POST /v1/responses",
    # A webhook endpoint's URL must be https:// to a public address (or one the operator allows); a test
    # delivery needs a receiver that answers.
    "POST /v1/webhook_endpoints",
    "POST /v1/webhook_endpoints/{endpoint_id}",
    "POST /v1/webhook_endpoints/{endpoint_id}/test",
    # Knowledge: the model must be an embedding model configured here, with the dimensions it makes; inputs must
    # have text; files, vector stores and vector DBs named must exist; a static chunking strategy's overlap is at
    # most half its size and a batch names either file_ids or files — rules the schema cannot state.
    "POST /v1/embeddings",
    "POST /v1/inference/embeddings",
    "POST /v1/files",  # a multipart body with a file, which the schema does not describe
    "POST /v1/vector_stores",
    "POST /v1/vector_stores/{vector_store_id}/files",
    "POST /v1/vector_stores/{vector_store_id}/files/{file_id}",
    "POST /v1/vector_stores/{vector_store_id}/file_batches",
    "POST /v1/vector-dbs",
    "POST /v1/tool-runtime/rag-tool/query",
    # The model must be configured; there must be something to compact.
    "POST /v1/responses/compact",
    # Agents API sessions: the agent's model must be configured, an agent_id must exist, input events must
    # answer pending calls of an idle or waiting session.
    "POST /v1/agents/sessions",
    "POST /v1/agents/sessions/{session_id}",
    "POST /v1/agents/sessions/{session_id}/events",
    # Automations: the body's shape depends on its `type` (a cron `expression` or a `run_at`), and a target
    # names a session or agent that must exist.
    "POST /v1/agents/automations",
    "POST /v1/agents/automations/{automation_id}",
}


def _existing_ids(http: httpx.Client) -> dict[str, str]:
    agent_id = create_agent(http)
    session_id = create_session(http, agent_id)
    turn = http.post(
        f"/v1/agents/{agent_id}/session/{session_id}/turn",
        json={"messages": [{"role": "user", "content": "hello"}], "stream": False},
    ).json()
    conversation = http.post("/v1/conversations", json={"items": [{"role": "user", "content": "hello"}]}).json()
    item = http.get(f"/v1/conversations/{conversation['id']}/items").json()["data"][0]
    ids = {"agent_id": agent_id, "session_id": session_id, "turn_id": turn["turn_id"]}
    return ids | {"step_id": turn["steps"][0]["step_id"], "conversation_id": conversation["id"], "item_id": item["id"]}


def _addressing_existing(ids: dict[str, str], case_and_choice: tuple[Case, bool]) -> Case:
    case, existing = case_and_choice
    if existing and case.path_parameters:
        case.path_parameters = {name: ids.get(name, value) for name, value in case.path_parameters.items()}
    return case


def test_every_operation_answers_as_its_schema_says_and_never_5xx(
    stack: Stack, http: httpx.Client, model: ScriptedModel
) -> None:
    config = schemathesis.Config.from_dict(
        {
            "operations": [
                {"include-name": name, "checks": {"positive_data_acceptance": {"enabled": False}}}
                for name in CONFIGURATION_DEPENDENT
            ]
        }
    )
    schema = schemathesis.openapi.from_url(f"{stack.base_url}/openapi.json", config=config)
    failures: dict[str, str] = {}
    cases = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        ids = _existing_ids(http)  # afresh for each operation: deletes and new turns use them up
        valid = st.tuples(operation.as_strategy(GenerationMode.POSITIVE), st.booleans())
        strategy = valid.map(partial(_addressing_existing, ids)) | operation.as_strategy(GenerationMode.NEGATIVE)

        @given(case=strategy)
        @settings(
            max_examples=CASES_PER_OPERATION,
            derandomize=True,
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
        def check(case: Case) -> None:
            nonlocal cases
            cases += 1
            case.call_and_validate(timeout=30)

        try:
            check()
        except (Exception, BaseExceptionGroup) as found:
            failures[operation.label] = str(found)

    assert not failures, "\n\n".join(f"{label}:\n{failure}" for label, failure in failures.items())
    assert cases >= CASES_PER_OPERATION * 10
