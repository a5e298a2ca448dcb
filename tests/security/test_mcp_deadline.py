"""One deadline bounds an MCP tool call, its retries included (DA_TOOL_CALL_DEADLINE): an MCP server
that takes the call and never answers costs the turn that deadline, after which the model reads a tool
error and the turn goes on.

The server here is a real socket server in front of the tests' MCP server: it relays the session's
set-up and the tool listing, and accepts a `tools/call` request, reads it, and never answers. The
outbound read timeout is shorter than the deadline, so each attempt fails as a retryable timeout: a
deadline per attempt would let the retries run the turn to several times the deadline.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import httpx
import pytest

from tests.support.rest import create_agent, create_session, final_turn
from tests.support.scripted_model import ALLOWED_HOST, ScriptedModel, ThreadedServer, text, tool_call
from tests.support.stack import Stack

DEADLINE = 4.0
READ_TIMEOUT = 1.5


class CallSwallower:
    """Relays HTTP requests to `upstream` one per connection, except those carrying a `tools/call`:
    their connections stay open and unanswered until `close`."""

    def __init__(self, upstream_port: int) -> None:
        self._upstream = upstream_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.swallowed: list[socket.socket] = []
        self._open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://{ALLOWED_HOST}:{self.port}/mcp"

    def _accept(self) -> None:
        with suppress(OSError):
            while True:
                connection, _ = self._listener.accept()
                self._open.append(connection)
                threading.Thread(target=self._relay, args=(connection,), daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        with suppress(OSError):
            received = b""
            while b"\r\n\r\n" not in received:
                chunk = client.recv(65536)
                if not chunk:
                    return
                received += chunk
            head, _, body = received.partition(b"\r\n\r\n")
            lines = head.split(b"\r\n")
            length = next(
                (int(line.split(b":", 1)[1]) for line in lines if line.lower().startswith(b"content-length:")), 0
            )
            while len(body) < length:
                body += client.recv(65536)
            if b'"tools/call"' in body:
                self.swallowed.append(client)  # read, and never answered
                return
            # One request per upstream connection, so that the next request comes on a new one, to be read here.
            kept = [line for line in lines if not line.lower().startswith(b"connection:")]
            request = b"\r\n".join([*kept, b"Connection: close"]) + b"\r\n\r\n" + body
            with socket.create_connection(("127.0.0.1", self._upstream)) as upstream:
                upstream.sendall(request)
                while chunk := upstream.recv(65536):
                    client.sendall(chunk)
            client.close()

    def close(self) -> None:
        self._listener.close()
        for connection in self._open:
            with suppress(OSError):
                connection.close()


@contextmanager
def call_swallower(upstream: ThreadedServer) -> Iterator[CallSwallower]:
    server = CallSwallower(upstream.port)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def bounded_api(stack: Stack) -> Iterator[httpx.Client]:
    """An API running its own worker (alone on its task queue) with a short tool call deadline."""
    settings = stack.settings.model_copy(
        update={
            "worker_in_api": True,
            "task_queue": f"{stack.settings.task_queue}-mcp-deadline",
            "tool_call_deadline": DEADLINE,
            "outbound_read_timeout": READ_TIMEOUT,
        }
    )
    with stack.other_api(settings) as url, httpx.Client(base_url=url, timeout=120) as http:
        yield http


def test_a_tool_call_no_one_answers_ends_in_a_tool_error_within_the_deadline_and_the_turn_goes_on(
    bounded_api: httpx.Client, model: ScriptedModel, mcp: ThreadedServer
) -> None:
    http = bounded_api
    with call_swallower(mcp) as mute, registered_toolgroup_at(http, mute.url) as toolgroup:
        model.script(tool_call("add_numbers", {"a": 2, "b": 3}), text("The tool did not answer."))
        agent_id = create_agent(http, toolgroups=[toolgroup])
        turns = f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"
        started = time.monotonic()
        turn = final_turn(http.post(turns, json={"messages": [{"role": "user", "content": "2+3?"}], "stream": True}))
        elapsed = time.monotonic() - started
        swallowed = len(mute.swallowed)

    assert swallowed >= 1  # the call reached the server, which never answered it
    assert turn["status"] == "completed", turn
    assert [step["step_type"] for step in turn["steps"]] == ["inference", "tool_execution", "inference"]
    answer = turn["steps"][1]["tool_responses"][0]["content"]
    assert answer.startswith("Error: the tool failed: The MCP server at http://localhost:"), answer
    assert f"{DEADLINE:g} s" in answer, answer
    assert turn["output_message"]["content"].strip() == "The tool did not answer."
    # The deadline, plus the turn's own inferences and Temporal's scheduling; not three attempts' worth.
    assert DEADLINE <= elapsed < DEADLINE + 3, f"the turn took {elapsed:.1f} s"


@contextmanager
def registered_toolgroup_at(http: httpx.Client, uri: str) -> Iterator[str]:
    toolgroup_id = f"mcp::mute-calls-{time.monotonic_ns()}"
    body = {"toolgroup_id": toolgroup_id, "provider_id": "model-context-protocol", "mcp_endpoint": {"uri": uri}}
    http.post("/v1/toolgroups", json=body).raise_for_status()
    try:
        yield toolgroup_id
    finally:
        http.delete(f"/v1/toolgroups/{toolgroup_id}")
