"""The API against its own OpenAPI schema: schemathesis fuzzes every operation over real HTTP.

Bounded: a fixed number of cases per operation, derandomized, and no example database. A third of the
schema-valid cases address an agent, session, turn, step, conversation and item that exist, so fuzzing gets
past the 404s of random ids into real sessions, turns and conversations; another third put in each path
parameter a word that a sibling path has in that place (`/v1/agents/{agent_id}` beside `/v1/agents/sessions`),
where one route can be taken for another.

The cases are the same in every run. Hypothesis draws a share of its strings and numbers from the constants
of the local modules imported so far (that is how the fuzz once found `/v1/agents/environments/session/…`
answered by the wrong dialect), so the cases would change with whatever the process had imported by then:
other test files on the same xdist worker, modules the stack imports lazily while it serves, the workflow
sandbox's imports. One Hypothesis run could even see that pool grow under it, and stop with "Inconsistent
data generation". So every local module is imported before anything is drawn, every case is drawn before any
is sent, and each is sent once: no case is replayed against a server that the cases before it have changed.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import Case, GenerationMode
from schemathesis.schemas import APIOperation, BaseSchema

from tests.support.rest import create_agent, create_session
from tests.support.scripted_model import ScriptedModel
from tests.support.stack import Stack

CASES_PER_OPERATION = 20
REPOSITORY = Path(__file__).resolve().parents[2]

# Where a schema-valid case's path parameters point: generated values, the resources that exist, or the
# literal words sibling paths have in the same place.
GENERATED, EXISTING, SIBLING_WORD = "generated", "existing", "sibling word"

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
    # llama-stack's wire types `ttl_seconds` as an integer, which this server refuses by name (chunks live as long
    # as their vector DB).
    "POST /v1/vector-io/insert",
    # Containers: a network policy other than `disabled` only where the operator allows one; file_ids must exist.
    "POST /v1/containers",
    # The inbox: `after` must be a cursor the inbox gave; an action needs the fields of its kind (outputs, an
    # approval request id), and a lifted limit only Agents API sessions have.
    "GET /v1/inbox",
    "POST /v1/inbox/{turn_id}/actions",
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

Planned = tuple[Case, str, dict[str, str]]
"""A drawn case, where its path parameters point, and a sibling word for each that has one."""


def _import_every_local_module() -> None:
    """Every module of the repository outside tests/ (Hypothesis takes no constants from tests), so that its
    constants from local code are all of them, whatever the process imported before."""
    for script in sorted(REPOSITORY.glob("*.py")):
        importlib.import_module(script.stem)
    for init in sorted(REPOSITORY.glob("*/__init__.py")):
        if init.parent.name == "tests":
            continue
        package = importlib.import_module(init.parent.name)
        for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            importlib.import_module(module.name)


def _segments(path: str) -> list[str]:
    return ["{}" if part.startswith("{") else part for part in path.strip("/").split("/")]


def _sibling_words(operation: APIOperation, paths: list[list[str]]) -> dict[str, list[str]]:
    """For each path parameter, the literal words other paths have in its place after the same prefix, where
    the path it makes is still this operation's: `/v1/agents/sessions` is a path of its own, which OpenAPI
    matches before `/v1/agents/{agent_id}`, but `/v1/agents/sessions/session/{session_id}` is only llama-stack's."""
    own = _segments(operation.path)
    names = re.findall(r"{([^}]+)}", operation.path)
    positions = [index for index, part in enumerate(own) if part == "{}"]
    words = {}
    for name, index in zip(names, positions, strict=True):
        siblings = {p[index] for p in paths if len(p) > index and p[:index] == own[:index] and p[index] != "{}"}
        kept = sorted(word for word in siblings if not _more_literal_path(own, index, word, paths))
        if kept:
            words[name] = kept
    return words


def _more_literal_path(own: list[str], index: int, word: str, paths: list[list[str]]) -> bool:
    """Whether another path of the schema has `word` literally where `own` has the parameter at `index`."""
    concrete = [*own[:index], word, *own[index + 1 :]]
    return any(
        path != own and len(path) == len(own) and all(c == p or p == "{}" for c, p in zip(concrete, path, strict=True))
        for path in paths
    )


def _draw(operation: APIOperation, words: dict[str, list[str]]) -> list[Planned]:
    drawn: list[Planned] = []
    addresses = st.sampled_from((GENERATED, EXISTING, SIBLING_WORD))
    sibling = st.fixed_dictionaries({name: st.sampled_from(choices) for name, choices in words.items()})
    valid = st.tuples(operation.as_strategy(GenerationMode.POSITIVE), addresses, sibling)
    invalid = st.tuples(operation.as_strategy(GenerationMode.NEGATIVE), st.just(GENERATED), st.just({}))

    @given(planned=valid | invalid)
    @settings(
        max_examples=CASES_PER_OPERATION,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def collect(planned: Planned) -> None:
        drawn.append(planned)

    collect()
    return drawn


def _plan(schema: BaseSchema, stride: int = 1) -> list[tuple[APIOperation, list[Planned]]]:
    """The cases of every `stride`-th operation."""
    operations = [result.ok() for result in schema.get_all_operations()]
    paths = [_segments(operation.path) for operation in operations]
    return [(operation, _draw(operation, _sibling_words(operation, paths))) for operation in operations[::stride]]


def _fingerprint(plan: list[tuple[APIOperation, list[Planned]]]) -> list[str]:
    def plain(value: Any) -> str:
        return type(value).__name__ if not isinstance(value, bytes) else value.hex()

    return [
        json.dumps(
            [operation.label, case.path_parameters, case.query, case.headers, case.cookies, case.body, address, words],
            default=plain,
            sort_keys=True,
        )
        for operation, planned in plan
        for case, address, words in planned
    ]


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


def _addressed(case: Case, address: str, words: dict[str, str], ids: dict[str, str]) -> Case:
    if case.path_parameters and address != GENERATED:
        chosen = ids if address == EXISTING else words
        case.path_parameters = {name: chosen.get(name, value) for name, value in case.path_parameters.items()}
    return case


def _sent(
    plan: list[tuple[APIOperation, list[Planned]]], http: httpx.Client
) -> Iterator[tuple[str, str, BaseException | None]]:
    """Each case sent once and checked: (operation, address, what a check found or None)."""
    for operation, planned in plan:
        # Afresh for each operation that addresses them: deletes and new turns use them up.
        ids = _existing_ids(http) if "{" in operation.path else {}
        for case, address, words in planned:
            try:
                _addressed(case, address, words, ids).call_and_validate(timeout=30)
            except (Exception, BaseExceptionGroup) as found:
                yield operation.label, address, found
            else:
                yield operation.label, address, None


# The suite's 180 s bound catches a hang; this test's work is CPU (drawing and sending ~2,000 cases: 50-140 s on
# 2 cores at load 1-7), so on a machine loaded several times over it needs longer, not fewer cases.
@pytest.mark.timeout(600)
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
    _import_every_local_module()
    plan = _plan(schema)
    drawn = _fingerprint(plan[::7])  # before sending: a case's path parameters are addressed in place

    failures: dict[str, str] = {}
    sent = {GENERATED: 0, EXISTING: 0, SIBLING_WORD: 0}
    for label, address, found in _sent(plan, http):
        sent[address] += 1
        if found is not None:
            failures.setdefault(label, f"({address} path parameters) {found}")

    assert not failures, "\n\n".join(f"{label}:\n{failure}" for label, failure in failures.items())
    assert sum(sent.values()) >= CASES_PER_OPERATION * 10
    assert sent[EXISTING] >= CASES_PER_OPERATION and sent[SIBLING_WORD] >= CASES_PER_OPERATION, sent
    # After the stack served every case, the same schema draws the same cases: nothing the process did meanwhile
    # (imports, requests, turns) reached the data. Every operation draws from the one pool of constants, so a
    # change to it would show in any: every seventh is drawn again.
    assert _fingerprint(_plan(schema, stride=7)) == drawn
