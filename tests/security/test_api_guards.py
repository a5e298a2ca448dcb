"""What the API refuses before any handler runs: callers without an API key, and oversized bodies."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import llama_stack_client
import pytest
from llama_stack_client import Agent, LlamaStackClient

from configuration.settings import OFFLINE_MODEL_ID
from tests.support.llama_agent import user_messages
from tests.support.stack import Stack

KEYS = ("first-key-0123", "second-key-4567")
JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def keyed_api(stack: Stack) -> Iterator[str]:
    with stack.other_api(stack.settings.model_copy(update={"api_keys": KEYS})) as url:
        yield url


def test_with_api_keys_every_route_but_health_needs_a_valid_bearer_key(keyed_api: str) -> None:
    with httpx.Client(base_url=keyed_api, timeout=30) as http:
        assert http.get("/v1/health").status_code == 200

        for method, path in [
            ("GET", "/v1/agents"),
            ("POST", "/v1/agents"),
            ("DELETE", "/v1/agents/some-agent"),
            ("GET", "/v1/agents/a/session/s/turn/t/events"),
            ("GET", "/openapi.json"),
            ("GET", "/v1/no-such-route"),
            ("POST", "/v1/health"),
        ]:
            refused = http.request(method, path, json={"not": "validated"})
            assert refused.status_code == 401, (method, path, refused.text)
            assert refused.headers["www-authenticate"] == "Bearer"
            assert "Authorization: Bearer <key>" in refused.json()["detail"]

        for header in ["Basic Zm9vOmJhcg==", "Bearer", "first-key-0123"]:
            malformed = http.get("/v1/agents", headers={"Authorization": header})
            assert malformed.status_code == 401, header
            assert "must be 'Bearer <key>'" in malformed.json()["detail"]

        for wrong in ["first-key-012", "first-key-01234", "FIRST-KEY-0123", "first-key-0123,second-key-4567"]:
            rejected = http.get("/v1/agents", headers={"Authorization": f"Bearer {wrong}"})
            assert rejected.status_code == 401, wrong
            assert rejected.headers["www-authenticate"] == 'Bearer error="invalid_token"'
            assert (
                rejected.json()["detail"] == "The API key in the Authorization header is not accepted by this server."
            )

        for key in KEYS:
            accepted = http.get("/v1/agents", headers={"Authorization": f"bearer  {key}"})
            assert accepted.status_code == 200, accepted.text


def test_the_official_client_authenticates_with_api_key(keyed_api: str) -> None:
    with LlamaStackClient(base_url=keyed_api, api_key=KEYS[1], max_retries=0, timeout=30) as llama:
        agent = Agent(llama, model=OFFLINE_MODEL_ID, instructions="Be brief.")
        session_id = agent.create_session("keyed")
        turn = agent.create_turn(messages=user_messages("hello"), session_id=session_id, stream=False)
        assert turn.output_message.content == "You said: hello"

    with LlamaStackClient(base_url=keyed_api, max_retries=0, timeout=30) as anonymous:
        with pytest.raises(llama_stack_client.AuthenticationError) as refused:
            anonymous.agents.create(agent_config={"model": OFFLINE_MODEL_ID, "instructions": "x"})
        assert refused.value.status_code == 401


def test_without_api_keys_no_credentials_are_needed(stack: Stack) -> None:
    assert httpx.get(f"{stack.base_url}/v1/agents", timeout=30).status_code == 200


@pytest.fixture(scope="module")
def small_api(stack: Stack) -> Iterator[str]:
    with stack.other_api(stack.settings.model_copy(update={"max_request_bytes": 1000})) as url:
        yield url


def _agent_body(instructions_length: int) -> dict[str, object]:
    return {"agent_config": {"model": OFFLINE_MODEL_ID, "instructions": "x" * instructions_length}}


def test_a_body_over_the_limit_is_413_naming_the_limit(small_api: str) -> None:
    with httpx.Client(base_url=small_api, timeout=30) as http:
        assert http.post("/v1/agents", json=_agent_body(800)).status_code == 200

        declared = http.post("/v1/agents", json=_agent_body(2000))
        assert declared.status_code == 413
        assert "limit of 1000 bytes (DA_MAX_REQUEST_BYTES)" in declared.json()["detail"]

        # Chunked: no Content-Length, so the body is counted as it arrives.
        chunks = iter([b'{"agent_config": {"model": "offline/echo", "instructions": "', b"x" * 600, b"x" * 600, b'"}}'])
        chunked = http.post("/v1/agents", content=chunks, headers=JSON)
        assert chunked.status_code == 413
        assert "limit of 1000 bytes" in chunked.json()["detail"]

        small_chunks = iter([b'{"agent_config": {"model": "offline/echo", ', b'"instructions": "short"}}'])
        assert http.post("/v1/agents", content=small_chunks, headers=JSON).status_code == 200


def test_the_default_limit_is_1_mib_well_under_what_a_workflow_can_carry(stack: Stack) -> None:
    with httpx.Client(base_url=stack.base_url, timeout=30) as http:
        big = http.post("/v1/agents", json=_agent_body(1024 * 1024))
        assert big.status_code == 413
        assert f"limit of {1024 * 1024} bytes" in big.json()["detail"]
