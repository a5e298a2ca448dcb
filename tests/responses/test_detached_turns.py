"""Detached turns (the runtime side of the Responses dialect), driven through the store and the gateway
as the Responses API will: a turn of no agent or session, whose inferences read stored settings and a
prior context, which pauses on function tools and resumes as a new segment with followup input and
new settings."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio.common import SearchAttributePair

from api.services import Services
from api.streams.event_hub import EventHub
from api.streams.event_stream import tail_events
from api.turn_gateway import ResumeRejected, TurnGateway
from api.turns.sweep import start_unstarted_turns
from domain.content import CompletionMessage, ToolCall, ToolResponse, ToolResponseMessage, UserMessage
from domain.turn_settings import (
    ApprovalDecision,
    ApprovalPolicy,
    ApprovalRequest,
    ContextMessage,
    FunctionTool,
    McpServer,
    SystemMessage,
    TurnSettings,
)
from domain.turns import ToolExecutionStep, Turn, TurnStatus
from tests.support import mcp_server
from tests.support.mcp_server import SECRET
from tests.support.processes import EVENT_SECONDS, wait_until
from tests.support.scripted_model import Reply, ScriptedModel, ThreadedServer, text, tool_call
from tests.support.stack import SCRIPTED_MODEL, Stack
from tool_runtime.credential_seal import CredentialSeal
from workflows.contracts import ToolResponsesSubmission, TurnPlan, TurnStart, turn_workflow_id
from workflows.search_attributes import CONVERSATION_ID

TENANT = "responses-tests"
WEATHER = FunctionTool(
    name="get_weather",
    description="Current weather",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def gateway(stack: Stack) -> TurnGateway:
    return TurnGateway(stack.client, stack.settings.task_queue)


def start_detached(
    stack: Stack,
    settings: TurnSettings,
    plan: TurnPlan | None = None,
    question: str = "What is the weather in Paris?",
    context: list[ContextMessage] | None = None,
    credentials: bool = False,
    conversation: str | None = None,
) -> str:
    """Record and start a detached turn as the Responses API does; its turn id."""
    turn_id, settings_id = str(uuid.uuid4()), f"set_{uuid.uuid4().hex}"
    plan = (plan or TurnPlan(model=settings.model)).model_copy(
        update={"settings_id": settings_id, "client_tool_names": [t.name for t in settings.function_tools]}
    )
    started_at = datetime.now(UTC)
    inputs = [UserMessage(content=question)]
    stack.background.run(
        stack.store.turns.begin_detached_turn(TENANT, turn_id, inputs, context or [], settings_id, settings, started_at)
    )
    if credentials:
        with_vault_credentials(stack, turn_id)
    start = TurnStart(turn_id=turn_id, plan=plan, segment_id=f"resp_{turn_id}", started_at=started_at)
    extra = [SearchAttributePair(CONVERSATION_ID, conversation)] if conversation else []
    stack.background.run(gateway(stack).start(start, TENANT, question, extra_attributes=extra))
    return turn_id


def wait_for(stack: Stack, turn_id: str, *statuses: TurnStatus, timeout: float = EVENT_SECONDS) -> Turn:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        turn = stack.background.run(stack.store.turns.get_turn(None, turn_id))
        if turn is not None and turn.status in statuses:
            return turn
        time.sleep(0.1)
    raise AssertionError(f"turn {turn_id} did not reach {statuses}: {turn}")


def events(stack: Stack, turn_id: str) -> list[dict[str, Any]]:
    return [event.body for event in stack.background.run(stack.store.turns.events_after([(turn_id, 0)]))[(turn_id, 0)]]


def kinds(bodies: list[dict[str, Any]]) -> list[str]:
    """Each event's kind: a runtime event's, or a stream chunk's event type."""
    return [
        body["runtime"]["kind"]
        if "runtime" in body
        else body.get("event", {}).get("payload", {}).get("event_type", "error")
        for body in bodies
    ]


def settings_for(stack: Stack, **fields: Any) -> TurnSettings:
    return TurnSettings(model=SCRIPTED_MODEL, **fields)


def test_a_detached_turn_pauses_on_a_function_tool_and_resumes_as_a_new_segment(
    stack: Stack, model: ScriptedModel
) -> None:
    model.script(tool_call("get_weather", {"city": "Paris"}), text("Sunny in Paris. Anything else?"), text("Bye."))
    first = settings_for(stack, instructions="Be brief.", function_tools=[WEATHER])
    context: list[ContextMessage] = [
        SystemMessage(content="Earlier instructions."),
        UserMessage(content="Hi"),
        CompletionMessage(content="", tool_calls=[ToolCall(call_id="old_1", tool_name="get_weather")]),
        ToolResponseMessage(call_id="old_1", content="rainy"),
        CompletionMessage(content="Hello!"),
    ]
    turn_id = start_detached(stack, first, context=context)

    paused = wait_for(stack, turn_id, TurnStatus.AWAITING_INPUT)
    assert paused.output_message is not None
    [call] = paused.output_message.tool_calls
    assert call.tool_name == "get_weather" and call.arguments == {"city": "Paris"}
    pending = stack.background.run(stack.store.turns.pending_calls(TENANT, [call.call_id, "unknown"]))
    assert pending == {call.call_id: turn_id}
    assert stack.background.run(stack.store.turns.pending_calls("another-tenant", [call.call_id])) == {}
    sent = model.requests[0]
    assert [m["role"] for m in sent["messages"]] == [
        "system",
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]
    assert sent["messages"][0]["content"] == "Be brief."
    assert sent["messages"][-1]["content"] == "What is the weather in Paris?"
    assert [tool["function"]["name"] for tool in sent["tools"]] == ["get_weather"]
    assert sent["tools"][0]["function"]["parameters"] == WEATHER.parameters

    # The next segment: the output, a followup question, other instructions and no tools.
    second_id, second = f"set_{uuid.uuid4().hex}", settings_for(stack, instructions="Be very brief.", temperature=0.3)
    stack.background.run(stack.store.turns.add_turn_settings(turn_id, second_id, second))
    submission = ToolResponsesSubmission(
        tool_responses=[ToolResponse(call_id=call.call_id, tool_name="get_weather", content="sunny")],
        followup_messages=[UserMessage(content="And tomorrow?")],
        plan=TurnPlan(model=SCRIPTED_MODEL, settings_id=second_id),
        segment_id="resp_second",
    )
    stack.background.run(gateway(stack).submit(turn_id, submission))

    done = wait_for(stack, turn_id, TurnStatus.COMPLETED)
    assert done.output_message is not None and done.output_message.content == "Sunny in Paris. Anything else? "
    resumed = model.requests[1]
    assert resumed["messages"][0] == {"role": "system", "content": "Be very brief."}
    assert [m["role"] for m in resumed["messages"][-4:]] == ["user", "assistant", "tool", "user"]
    assert resumed["messages"][-2] == {"role": "tool", "tool_call_id": call.call_id, "content": "sunny"}
    assert resumed["messages"][-1] == {"role": "user", "content": "And tomorrow?"}
    assert resumed["temperature"] == 0.3 and "tools" not in resumed
    tool_step = done.steps[1]
    assert isinstance(tool_step, ToolExecutionStep)
    assert [m.content for m in tool_step.followup_messages] == ["And tomorrow?"]
    assert stack.background.run(stack.store.turns.pending_calls(TENANT, [call.call_id])) == {}

    stored = kinds(events(stack, turn_id))
    pause = stored.index("turn_awaiting_input")
    assert stored[pause + 1] == "segment_started"
    assert stored[-1] == "turn_complete"
    assert events(stack, turn_id)[pause + 1]["runtime"]["segment_id"] == "resp_second"


def test_settings_reach_the_model(stack: Stack, model: ScriptedModel) -> None:
    model.script(text('{"city": "Paris"}'))
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    response_format = {"type": "json_schema", "json_schema": {"name": "place", "schema": schema, "strict": True}}
    settings = settings_for(
        stack,
        instructions="Answer in JSON.",
        function_tools=[WEATHER],
        tool_choice="get_weather",
        parallel_tool_calls=False,
        temperature=0.2,
        top_p=0.9,
        max_output_tokens=50,
        response_format=response_format,
    )
    turn_id = start_detached(stack, settings)

    wait_for(stack, turn_id, TurnStatus.COMPLETED)
    [sent] = model.requests
    assert sent["messages"][0] == {"role": "system", "content": "Answer in JSON."}
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert sent["parallel_tool_calls"] is False
    assert (sent["temperature"], sent["top_p"], sent["max_tokens"]) == (0.2, 0.9, 50)
    assert sent["response_format"] == response_format


def test_a_detached_turn_shows_only_its_tenant(stack: Stack, model: ScriptedModel) -> None:
    model.script(text("Hello."))
    turn_id = start_detached(stack, settings_for(stack))

    wait_for(stack, turn_id, TurnStatus.COMPLETED)
    assert stack.background.run(stack.store.turns.turn_tenant(turn_id)) == TENANT
    assert "tools" not in model.requests[0] and "parallel_tool_calls" not in model.requests[0]


VAULT = "vault"


def mcp_plan(mcp: ThreadedServer, **fields: Any) -> TurnPlan:
    server = McpServer(label=VAULT, url=f"{mcp.allowed_url}/mcp", **fields)
    return TurnPlan(model=SCRIPTED_MODEL, mcp_servers=[server])


def with_vault_credentials(stack: Stack, turn_id: str) -> None:
    """Seal the vault server's headers for the turn, keyed by its label, as the Responses API does."""
    assert stack.settings.credentials_key is not None
    sealed = CredentialSeal(stack.settings.credentials_key).seal({}, by_label={VAULT: {"Authorization": SECRET}})
    assert stack.background.run(stack.store.turns.keep_turn_credentials(turn_id, sealed))


def vault_answers(turn: Turn) -> list[ToolResponse]:
    return [
        response
        for step in turn.steps
        if isinstance(step, ToolExecutionStep)
        for response in step.tool_responses
        if response.tool_name == "open_vault"
    ]


def runtime_bodies(stack: Stack, turn_id: str, kind: str) -> list[dict[str, Any]]:
    return [body["runtime"] for body in events(stack, turn_id) if body.get("runtime", {}).get("kind") == kind]


def approve(stack: Stack, turn_id: str, approve: bool, reason: str | None = None) -> ApprovalRequest:
    [requested] = runtime_bodies(stack, turn_id, "approval_requested")
    request = ApprovalRequest.model_validate(requested)
    decision = ApprovalDecision(approval_request_id=request.approval_request_id, approve=approve, reason=reason)
    submission = ToolResponsesSubmission(tool_responses=[], approvals=[decision], segment_id=f"resp_{uuid.uuid4().hex}")
    stack.background.run(gateway(stack).submit(turn_id, submission))
    return request


def recorded(request: ApprovalRequest, decision: str, reason: str | None = None) -> dict[str, object]:
    """The decision kept on the answered call; `approve` submits as the workflow's own caller, naming nobody."""
    return {
        "approval_request_id": request.approval_request_id,
        "decision": decision,
        "reason": reason,
        "decided_by": None,
        "tenant": None,
        "decided_at": None,
    }


def test_an_mcp_call_needing_approval_pauses_the_turn_and_runs_once_when_approved(
    stack: Stack, model: ScriptedModel, mcp: ThreadedServer
) -> None:
    model.script(tool_call("add_numbers", {"a": 1, "b": 2}), tool_call("open_vault"), text("It is open."))
    mcp_server.AUTHORIZATIONS.clear()
    plan = mcp_plan(mcp, allowed_tools=["add_numbers", "open_vault"], approval=ApprovalPolicy(always=["open_vault"]))
    turn_id = start_detached(stack, settings_for(stack), plan, credentials=True)

    paused = wait_for(stack, turn_id, TurnStatus.AWAITING_INPUT)
    [listed] = runtime_bodies(stack, turn_id, "tools_listed")
    assert (listed["server_label"], listed["error"]) == (VAULT, None)
    assert sorted(tool["name"] for tool in listed["tools"]) == ["add_numbers", "open_vault"]
    assert sorted(tool["function"]["name"] for tool in model.requests[0]["tools"]) == ["add_numbers", "open_vault"]
    [added] = [s for s in paused.steps if isinstance(s, ToolExecutionStep)]
    assert added.tool_responses[0].content == "3"
    assert added.tool_responses[0].metadata == {"server_label": VAULT, "approval_request_id": None}
    assert vault_answers(paused) == []
    stored = kinds(events(stack, turn_id))
    assert stored.index("approval_requested") < stored.index("turn_awaiting_input")
    assert paused.output_message is not None and paused.output_message.tool_calls == []

    request = approve(stack, turn_id, approve=True)
    assert stack.background.run(stack.store.turns.pending_calls(TENANT, [request.approval_request_id])) == {}
    done = wait_for(stack, turn_id, TurnStatus.COMPLETED)
    [answer] = vault_answers(done)
    assert answer.content == "the vault is open"
    assert answer.metadata == {
        "server_label": VAULT,
        "approval_request_id": request.approval_request_id,
        "decision": recorded(request, "approved"),
    }
    assert mcp_server.SECRET in mcp_server.AUTHORIZATIONS
    assert model.requests[-1]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": request.call.call_id,
        "content": "the vault is open",
    }
    # The headers reach the server and nothing else: events, rows, the workflow's history.
    token = SECRET.removeprefix("Bearer ")
    assert token not in json.dumps(events(stack, turn_id))
    assert token not in stack.closed_history(turn_workflow_id(turn_id)).to_json()
    assert token not in stack.store_text()


def test_a_denied_mcp_call_is_not_run_and_the_model_reads_why(
    stack: Stack, model: ScriptedModel, mcp: ThreadedServer
) -> None:
    model.script(tool_call("open_vault"), text("Understood."))
    plan = mcp_plan(mcp, approval=ApprovalPolicy(default=True))
    turn_id = start_detached(stack, settings_for(stack), plan, credentials=True)
    wait_for(stack, turn_id, TurnStatus.AWAITING_INPUT)
    mcp_server.AUTHORIZATIONS.clear()

    request = approve(stack, turn_id, approve=False, reason="not today")

    done = wait_for(stack, turn_id, TurnStatus.COMPLETED)
    [answer] = vault_answers(done)
    assert answer.content == "denied by the user: not today"
    assert answer.metadata == {
        "server_label": VAULT,
        "approval_request_id": request.approval_request_id,
        "denied": True,
        "decision": recorded(request, "denied", "not today"),
    }
    assert mcp_server.AUTHORIZATIONS == []  # the MCP server was not asked anything
    assert model.requests[-1]["messages"][-1]["content"] == "denied by the user: not today"
    assert kinds(events(stack, turn_id)).count("tools_listed") == 1  # listed once per turn, not per segment


def test_max_tool_calls_caps_the_server_calls_of_a_segment(
    stack: Stack, model: ScriptedModel, mcp: ThreadedServer
) -> None:
    both = Reply(tool_calls=[("add_numbers", {"a": 1, "b": 2}), ("add_numbers", {"a": 3, "b": 4})])
    model.script(both, text("Done."))
    plan = mcp_plan(mcp).model_copy(update={"max_tool_calls": 1})
    turn_id = start_detached(stack, settings_for(stack), plan)

    done = wait_for(stack, turn_id, TurnStatus.COMPLETED)
    answers = sorted(str(r.content) for s in done.steps if isinstance(s, ToolExecutionStep) for r in s.tool_responses)
    assert answers[0] in ("3", "7")
    assert answers[1].startswith("Error: not executed: this response reached its limit of 1 tool calls")


def test_an_mcp_server_that_cannot_be_listed_is_reported_and_the_turn_goes_on(
    stack: Stack, model: ScriptedModel
) -> None:
    model.script(text("No tools today."))
    plan = TurnPlan(model=SCRIPTED_MODEL, mcp_servers=[McpServer(label="gone", url="http://127.0.0.1:9/mcp")])
    turn_id = start_detached(stack, settings_for(stack), plan)

    done = wait_for(stack, turn_id, TurnStatus.COMPLETED)
    [listed] = runtime_bodies(stack, turn_id, "tools_listed")
    assert listed["tools"] == [] and "could not" in listed["error"]
    assert "tools" not in model.requests[0]
    assert done.output_message is not None


def test_the_sweep_fails_a_detached_turn_whose_workflow_never_started(stack: Stack) -> None:
    turn_id, settings_id = str(uuid.uuid4()), f"set_{uuid.uuid4().hex}"
    long_ago = datetime.now(UTC) - timedelta(hours=1)
    inputs = [UserMessage(content="lost")]
    settings = settings_for(stack)
    stack.background.run(
        stack.store.turns.begin_detached_turn(TENANT, turn_id, inputs, [], settings_id, settings, long_ago)
    )
    services = Services(stack.settings, stack.store, gateway(stack), None, None, None)  # type: ignore[arg-type]

    started = stack.background.run(start_unstarted_turns(services, timedelta(minutes=30)))

    assert turn_id not in started
    turn = wait_for(stack, turn_id, TurnStatus.FAILED)
    assert turn.error is not None and "never started" in turn.error and "create it again" in turn.error


def test_a_responses_workflow_is_found_by_each_response_id_and_its_conversation(
    stack: Stack, model: ScriptedModel
) -> None:
    model.script(tool_call("get_weather", {"city": "Oslo"}), text("Cold."))
    conversation = f"conv_{uuid.uuid4().hex}"
    turn_id = start_detached(stack, settings_for(stack, function_tools=[WEATHER]), conversation=conversation)
    paused = wait_for(stack, turn_id, TurnStatus.AWAITING_INPUT)
    assert paused.output_message is not None
    [call] = paused.output_message.tool_calls
    second = f"resp_{uuid.uuid4().hex}"
    submission = ToolResponsesSubmission(
        tool_responses=[ToolResponse(call_id=call.call_id, tool_name=call.tool_name, content="-5")], segment_id=second
    )
    stack.background.run(gateway(stack).submit(turn_id, submission))
    wait_for(stack, turn_id, TurnStatus.COMPLETED)

    for query in (f'ResponseId="resp_{turn_id}"', f'ResponseId="{second}"', f'ConversationId="{conversation}"'):
        assert listed(stack, query) == [turn_workflow_id(turn_id)], query


def listed(stack: Stack, query: str) -> list[str]:
    """Workflow ids that a visibility query finds, once it finds any (visibility lags, the more under load)."""

    async def ids() -> list[str]:
        return [execution.id async for execution in stack.client.list_workflows(query)]

    return wait_until(lambda: stack.background.run(ids()), f"a workflow found by {query}", EVENT_SECONDS)


def test_one_pause_holds_client_calls_and_approvals_together(
    stack: Stack, model: ScriptedModel, mcp: ThreadedServer
) -> None:
    model.script(Reply(tool_calls=[("get_weather", {"city": "Rome"}), ("open_vault", {})]), text("Warm, and open."))
    plan = mcp_plan(mcp, approval=ApprovalPolicy(always=["open_vault"]))
    turn_id = start_detached(stack, settings_for(stack, function_tools=[WEATHER]), plan, credentials=True)
    paused = wait_for(stack, turn_id, TurnStatus.AWAITING_INPUT)
    assert paused.output_message is not None
    [call] = paused.output_message.tool_calls
    [requested] = runtime_bodies(stack, turn_id, "approval_requested")
    approval_id = requested["approval_request_id"]
    pending = stack.background.run(stack.store.turns.pending_calls(TENANT, [call.call_id, approval_id]))
    assert pending == {call.call_id: turn_id, approval_id: turn_id}

    answers_only = ToolResponsesSubmission(
        tool_responses=[ToolResponse(call_id=call.call_id, tool_name=call.tool_name, content="warm")]
    )
    try:
        stack.background.run(gateway(stack).submit(turn_id, answers_only))
        raise AssertionError("a submission without the pending decision was taken")
    except ResumeRejected as rejected:
        assert approval_id in str(rejected) and not rejected.conflict
    submission = answers_only.model_copy(
        update={
            "approvals": [ApprovalDecision(approval_request_id=approval_id, approve=True)],
            "followup_messages": [UserMessage(content="Thanks!")],
            "segment_id": f"resp_{uuid.uuid4().hex}",
        }
    )
    stack.background.run(gateway(stack).submit(turn_id, submission))

    done = wait_for(stack, turn_id, TurnStatus.COMPLETED)
    assert [answer.content for answer in vault_answers(done)] == ["the vault is open"]
    last = model.requests[-1]["messages"]
    assert [m["role"] for m in last[-4:]] == ["assistant", "tool", "tool", "user"]
    assert {m["content"] for m in last[-3:-1]} == {"warm", "the vault is open"}
    assert last[-1] == {"role": "user", "content": "Thanks!"}


def test_the_llama_stack_stream_skips_runtime_events_and_the_runtime_reads_them(
    stack: Stack, model: ScriptedModel
) -> None:
    model.script(text("Hello."))
    plan = TurnPlan(model=SCRIPTED_MODEL, mcp_servers=[McpServer(label="gone", url="http://127.0.0.1:9/mcp")])
    turn_id = start_detached(stack, settings_for(stack), plan)
    wait_for(stack, turn_id, TurnStatus.COMPLETED)
    stored = kinds(events(stack, turn_id))
    assert stored[0] == "tools_listed" and stored[-1] == "turn_complete"
    assert "usage" in stored  # the model call's tokens, between its deltas and its step_complete

    async def tailed(include_runtime: bool) -> list[str]:
        hub = EventHub(stack.store)
        polling = asyncio.create_task(hub.run())

        async def running() -> bool:
            return False

        try:
            found = tail_events(hub, turn_id, 0, running, include_runtime=include_runtime)
            return kinds([event.body async for event in found if event is not None])
        finally:
            polling.cancel()

    llama_kinds = [kind for kind in stored if kind not in ("tools_listed", "usage")]
    assert stack.background.run(tailed(include_runtime=False)) == llama_kinds
    assert stack.background.run(tailed(include_runtime=True)) == stored


def test_a_resumed_segment_lists_the_mcp_servers_its_plan_adds(
    stack: Stack, model: ScriptedModel, mcp: ThreadedServer
) -> None:
    model.script(tool_call("get_weather", {"city": "Bern"}), tool_call("add_numbers", {"a": 2, "b": 2}), text("4."))
    turn_id = start_detached(stack, settings_for(stack, function_tools=[WEATHER]))
    paused = wait_for(stack, turn_id, TurnStatus.AWAITING_INPUT)
    assert paused.output_message is not None and runtime_bodies(stack, turn_id, "tools_listed") == []
    [call] = paused.output_message.tool_calls
    settings_id = f"set_{uuid.uuid4().hex}"
    stack.background.run(stack.store.turns.add_turn_settings(turn_id, settings_id, settings_for(stack)))
    submission = ToolResponsesSubmission(
        tool_responses=[ToolResponse(call_id=call.call_id, tool_name=call.tool_name, content="mild")],
        plan=mcp_plan(mcp, allowed_tools=["add_numbers"]).model_copy(update={"settings_id": settings_id}),
        segment_id=f"resp_{uuid.uuid4().hex}",
    )
    stack.background.run(gateway(stack).submit(turn_id, submission))

    done = wait_for(stack, turn_id, TurnStatus.COMPLETED)
    stored = kinds(events(stack, turn_id))
    assert stored.index("turn_awaiting_input") < stored.index("segment_started") < stored.index("tools_listed")
    assert [tool["function"]["name"] for tool in model.requests[1]["tools"]] == ["add_numbers"]
    answers = [r.content for s in done.steps if isinstance(s, ToolExecutionStep) for r in s.tool_responses]
    assert answers == ["mild", "4"]
