"""`AgentTurn`: one user request handled to completion, durably.

The loop: infer → run or hand out tool calls → infer again … until the model answers without
tool calls or `max_infer_iters` model calls have been made. Client tool calls pause the turn
(status awaiting_input) until the caller submits their results through the
`submit_tool_responses` update, which may come minutes or days later.

Every event a client sees is written to the store by an activity: the inference activity
writes its own step_start and deltas, and events decided here (step_complete, the final
turn event) travel in the input of the next activity, so each is written exactly once and
before anything that follows it.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Literal, NoReturn

from temporalio import workflow
from temporalio.common import RawValue, RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception
from temporalio.workflow import ActivityCancellationType

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel

    from domain.agents import AgentToolGroup, ToolConfig
    from domain.content import CompletionMessage, ToolCall, ToolResponse, UserMessage, content_as_text
    from domain.events import KeyedEvent
    from domain.turn_settings import ApprovalRequest
    from domain.turns import InferenceStep, Step, ToolExecutionStep, Turn, TurnStatus
    from workflows import mcp_servers, pauses, steps, turn_end
    from workflows.contracts import (
        DOCUMENT_UNAVAILABLE,
        FETCH_DOCUMENTS_ACTIVITY,
        INFER_ACTIVITY,
        INFERENCE_HEARTBEAT_TIMEOUT,
        LOAD_STEPS_ACTIVITY,
        PAYLOAD_BUDGET_BYTES,
        PROVIDER_REJECTED,
        REPLY_TOO_LARGE,
        RESOLVE_TOOLS_ACTIVITY,
        RUN_SHIELDS_ACTIVITY,
        RUN_TOOL_ACTIVITY,
        SAVE_PROGRESS_ACTIVITY,
        TOOL_HEARTBEAT_TIMEOUT,
        TOOL_RESPONSES_SIGNAL,
        TOOLS_UNAVAILABLE,
        Continuation,
        FetchDocumentsRequest,
        FetchDocumentsResult,
        InferenceRequest,
        InferenceResult,
        LoadStepsRequest,
        LoadStepsResult,
        PendingWrites,
        ResolveToolsRequest,
        ResolveToolsResult,
        ServerTool,
        ShieldRequest,
        ShieldResult,
        ToolResponsesSubmission,
        ToolRunRequest,
        Touchpoint,
        TurnEnding,
        TurnFinished,
        TurnOutcome,
        TurnPlan,
        TurnProgress,
        TurnStart,
        pause_event_key,
        runtime_event,
    )
    from workflows.search_attributes import RESPONSE_ID, TURN_STATUS


def _step_line(step: Step) -> str:
    if isinstance(step, InferenceStep):
        calls = ", ".join(f"`{call.tool_name}`" for call in step.model_response.tool_calls)
        return f"inference → {'calls ' + calls if calls else 'answered'}"
    if isinstance(step, ToolExecutionStep):
        return "tool_execution · " + ", ".join(f"`{call.tool_name}`" for call in step.tool_calls)
    return f"{step.step_type}"


class _TooLarge(Exception):
    """Something the turn would have to carry does not fit in a Temporal payload: the turn fails."""


CONTINUE_AS_NEW_HISTORY_BYTES = 10_000_000
"""A turn whose history reaches this size continues as new, as at DA_CONTINUE_AS_NEW_EVENTS events:
large model replies (up to 1.5 MB each) would reach Temporal's 50 MB history limit long before."""
CARRY_STEPS_PATCH = "pending-steps-within-payload-budget"
"""Pending steps too large to ride along with an activity's input are first written by a local activity."""


def _size(payload: BaseModel) -> int:
    return len(payload.model_dump_json())


_STORE_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=200), maximum_interval=timedelta(seconds=10))
_TICK = timedelta(microseconds=1)


@workflow.defn(name="AgentTurn")
class TurnWorkflow:
    @workflow.init
    def __init__(self, start: TurnStart) -> None:
        self._start = start
        self._plan: TurnPlan = start.turn_plan()
        self._tool_config: ToolConfig = start.tool_config or self._plan.tool_config or ToolConfig()
        self._status = TurnStatus.RUNNING
        self._stored_status = TurnStatus.RUNNING
        self._steps: list[Step] = []
        self._saved_steps = 0
        self._output: CompletionMessage | None = None
        self._completed_at: datetime | None = None
        self._error: str | None = None
        self._inferences = 0
        self._pause = pauses.Pause()
        self._runtime_events: list[KeyedEvent] = []
        """Runtime events (domain: segment_started, tools_listed, approval_requested) the next write stores."""
        self._last_time = start.started_at
        self._saving: asyncio.Future[TurnOutcome | None] | None = None
        self._server_tools: list[ServerTool] = []
        self._listed_servers: list[str] = []
        """Labels of the request-named MCP servers listed so far: each is listed once per turn."""
        self._segment_server_calls = 0
        self._input_messages = start.input_messages

    @workflow.run
    async def run(self, start: TurnStart) -> TurnOutcome:
        try:
            if refusal := await self._open(start):
                return await self._finish(refusal)
            return await self._converse(start)
        except _TooLarge as too_large:
            return await self._end(TurnStatus.FAILED, f"Turn {start.turn_id} failed: {too_large}.")
        except (ActivityError, asyncio.CancelledError) as error:
            if is_cancelled_exception(error):
                return await self._end(TurnStatus.CANCELLED, f"Turn {start.turn_id} was cancelled.")
            if isinstance(error, ActivityError):
                cause = error.cause
                reason = cause.message if isinstance(cause, ApplicationError) else str(cause or error)
                if isinstance(cause, ApplicationError) and cause.type in (TOOLS_UNAVAILABLE, DOCUMENT_UNAVAILABLE):
                    return await self._end(TurnStatus.FAILED, reason)
                return await self._end(TurnStatus.FAILED, f"Inference failed: {reason}")
            raise

    async def _open(self, start: TurnStart) -> CompletionMessage | None:
        """Get the turn ready: its documents, tools and input check — or, for a continued or reopened
        turn, its state so far. Returns a shield's refusal if the input is refused."""
        client_tools = sorted(self._plan.client_tool_names)
        toolgroups = start.toolgroups if start.toolgroups is not None else self._plan.toolgroups
        if start.continuation is not None:
            await self._restore(start.continuation)
            if not self._server_tools and toolgroups:
                self._server_tools = await self._resolve_tools(toolgroups, client_tools)
            return await self._take_reopening_results(start.reopened_with) if start.reopened_with else None
        if start.document_urls:
            await self._fetch_documents(start.document_urls)
        if toolgroups:
            self._server_tools = await self._resolve_tools(toolgroups, client_tools)
        await self._list_new_mcp_servers()
        return await self._guard("user-input", None)

    async def _converse(self, start: TurnStart) -> TurnOutcome:
        """Infer, run or hand out the tool calls, and again, until the model answers or the limit is hit."""
        while True:
            # Read each round: a resumed segment may bring other tools and limits.
            client_tools = set(self._plan.client_tool_names)
            server_tools = {tool.name: tool for tool in self._offered_tools()}
            max_inferences = self._plan.max_infer_iters or 10
            history = workflow.info()
            if (
                history.get_current_history_length() >= start.continue_as_new_after_events
                or history.get_current_history_size() >= CONTINUE_AS_NEW_HISTORY_BYTES
            ):
                await self._continue_as_new()
            last = self._inferences + 1 >= max_inferences
            message, finished = await self._infer(last)
            ending = turn_end.ending(message, last)
            if finished is not None and ending is not None:
                return self._record_end(ending, finished)
            done = ending is not None
            message = ending or message
            calls = [] if done else message.tool_calls
            server_calls = [call for call in calls if call.tool_name in server_tools]
            approvals, requested = mcp_servers.approvals_needed(self._plan, server_calls, server_tools)
            self._runtime_events += requested
            if approvals:
                held = {request.call.call_id for request in approvals}
                server_calls = [call for call in server_calls if call.call_id not in held]
            if server_calls:
                await self._run_server_tools(server_calls, server_tools)
            unknown = [c for c in calls if c.tool_name not in client_tools and c.tool_name not in server_tools]
            if unknown:
                self._answer_unknown_tools(unknown)
            client_calls = [call for call in calls if call.tool_name in client_tools]
            output = [content_as_text(message.content)]
            if (done or client_calls) and (refusal := await self._guard("assistant-output", output)):
                return await self._finish(refusal)
            if done:
                return await self._finish(message)
            if client_calls or approvals:
                paused_at = self._now()
                submission = await self._await_input(client_calls, approvals)
                if submission is None:
                    return await self._end(
                        TurnStatus.EXPIRED,
                        f"Turn {start.turn_id} expired: no client tool results within "
                        f"{start.awaiting_input_timeout}. Start a new turn.",
                    )
                responses = await self._resume(submission, client_calls, approvals, paused_at)
                if refusal := await self._guard("user-input", [content_as_text(r.content) for r in responses]):
                    return await self._finish(refusal)

    @workflow.query
    def turn(self) -> Turn:
        """The turn as it stands: status, steps so far, and the tool calls it waits for."""
        return Turn(
            turn_id=self._start.turn_id,
            session_id=self._start.session_id or "",
            input_messages=self._input_messages,
            steps=self._steps,
            output_message=self._output,
            started_at=self._start.started_at,
            completed_at=self._completed_at,
            status=self._status,
            error=self._error,
        )

    @workflow.update
    def submit_tool_responses(self, submission: ToolResponsesSubmission) -> int:
        """Hand the paused turn its client tools' results; returns the number of the pause it ends."""
        self._check_tool_responses(submission)
        self._pause.submitted = submission
        return self._pause.mark

    @workflow.signal(name=TOOL_RESPONSES_SIGNAL)
    def submit_tool_responses_signal(self, raw: RawValue) -> None:
        """The update's results, sent as a signal: what an operator sends from the Temporal UI or CLI.

        A signal cannot answer, so one that does not fit the pause changes nothing but the current
        details, which say why. Its input is read here rather than by the SDK, which would drop
        an undecodable signal with only a worker log line to show for it.
        """
        try:
            submission = pauses.read_signal(raw)
            self._check_tool_responses(submission)
        except (ApplicationError, ValueError) as ignored:
            reason = ignored.message if isinstance(ignored, ApplicationError) else str(ignored)
            self._pause.ignored_signal = reason
            workflow.logger.warning("tool results signal ignored: %s", reason)
            self._describe()
            return
        self._pause.ignored_signal = None
        self._pause.submitted = submission

    @submit_tool_responses.validator
    def _check_tool_responses(self, submission: ToolResponsesSubmission) -> None:
        self._pause.check(self._start.turn_id, self._status, submission)

    def _set_status(self, status: TurnStatus) -> None:
        self._status = status
        workflow.upsert_search_attributes([TURN_STATUS.value_set(status.value)])

    def _describe(self) -> None:
        """Keep the UI's "current details" telling what the turn did and what it waits for."""
        lines = [f"**Status:** {self._status.value}", "", f"**Steps so far:** {len(self._steps)}"]
        lines += [f"{i}. {_step_line(step)}" for i, step in enumerate(self._steps, start=1)]
        lines += self._pause.detail_lines()
        if self._error:
            lines += ["", f"**Error:** {self._error}"]
        if self._pause.ignored_signal:
            lines += ["", f"**Last signal ignored:** {self._pause.ignored_signal}"]
        workflow.set_current_details("\n".join(lines))

    def _now(self) -> datetime:
        """workflow.now(), nudged so that consecutive timestamps strictly increase (clients compare them)."""
        self._last_time = max(workflow.now(), self._last_time + _TICK)
        return self._last_time

    def _add_step(self, step: Step) -> None:
        """Record a step; the next write stores it with its step_complete event."""
        self._steps.append(step)
        self._describe()

    async def _infer(self, last: bool) -> tuple[CompletionMessage, TurnFinished | None]:
        """The model's message, and when the activity wrote it as the turn's end, the times it gave.
        `last`: the turn's last model call allowed (max_infer_iters)."""
        step_id = str(workflow.uuid4())
        started_at = self._now()
        ending = None
        # With output shields, an answer is checked before it may end the turn: the workflow writes the end.
        if not self._plan.output_shields and self._start.inference_writes_end:
            ending = TurnEnding(
                step_index=len(self._steps),
                started_at=started_at,
                last_inference=last,
                event_key=f"turn:complete:{len(self._steps) + 1}",
                agent_id=self._start.agent_id,
            )
        request = InferenceRequest(
            turn_id=self._start.turn_id,
            session_id=self._start.session_id,
            step_id=step_id,
            tool_config=self._tool_config,
            server_tools=self._offered_tools(),
            settings_id=self._plan.settings_id,
            ending=ending,
        )
        pending = await self._carry(request)
        result = await workflow.execute_activity(
            INFER_ACTIVITY,
            request.model_copy(update={"pending": pending}),
            result_type=InferenceResult,
            summary=f"inference · {self._plan.model}",
            start_to_close_timeout=timedelta(minutes=10),
            heartbeat_timeout=INFERENCE_HEARTBEAT_TIMEOUT,
            # A cancelled turn's last events are written only after its model call has stopped.
            cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            retry_policy=RetryPolicy(
                initial_interval=timedelta(seconds=1),
                maximum_interval=timedelta(seconds=30),
                maximum_attempts=self._start.inference_max_attempts,
                non_retryable_error_types=[PROVIDER_REJECTED, REPLY_TOO_LARGE],
            ),
        )
        self._written(pending)
        self._inferences += 1
        message, finished = result.message, result.finished
        completed_at = finished.step_completed_at if finished else self._now()
        self._add_step(steps.inference(self._start.turn_id, step_id, started_at, completed_at, message))
        return message, finished

    async def _fetch_documents(self, urls: list[str]) -> None:
        result = await workflow.execute_activity(
            FETCH_DOCUMENTS_ACTIVITY,
            FetchDocumentsRequest(session_id=self._start.session_id, turn_id=self._start.turn_id, urls=urls),
            result_type=FetchDocumentsResult,
            summary=f"documents · fetch {len(urls)}",
            start_to_close_timeout=timedelta(minutes=2),
            retry_policy=RetryPolicy(maximum_attempts=3, non_retryable_error_types=[DOCUMENT_UNAVAILABLE]),
        )
        # Empty from this release on: the messages with their documents are in the turn's row.
        self._input_messages = result.input_messages

    async def _restore(self, continuation: Continuation) -> None:
        self._inferences = continuation.inferences
        self._last_time = continuation.last_time
        self._server_tools = continuation.server_tools
        self._listed_servers = continuation.listed_servers
        self._segment_server_calls = continuation.segment_server_calls
        result = await workflow.execute_activity(
            LOAD_STEPS_ACTIVITY,
            LoadStepsRequest(session_id=self._start.session_id, turn_id=self._start.turn_id),
            result_type=LoadStepsResult,
            summary="store · load steps",
            start_to_close_timeout=timedelta(seconds=30),
            retry_policy=_STORE_RETRY,
        )
        self._steps = result.steps
        self._saved_steps = len(self._steps)
        self._describe()

    async def _take_reopening_results(self, responses: list[ToolResponse]) -> CompletionMessage | None:
        """A client that parses tool calls from the answer itself (ReAct) resumes a completed turn:
        its results become a tool_execution step with no calls of ours, and the turn goes on."""
        now = self._now()
        self._add_step(
            steps.tool_execution(self._start.turn_id, str(workflow.uuid4()), now, self._now(), [], responses)
        )
        return await self._guard("user-input", [content_as_text(r.content) for r in responses])

    async def _continue_as_new(self) -> NoReturn:
        """Start a fresh run of this turn before its history grows large; state goes via the store."""
        await self._write(
            TurnProgress(
                turn_id=self._start.turn_id,
                session_id=self._start.session_id,
                pending=self._pending(),
                status=self._status,
            )
        )
        await workflow.wait_condition(workflow.all_handlers_finished)
        continuation = Continuation(
            inferences=self._inferences,
            last_time=self._last_time,
            server_tools=self._server_tools,
            listed_servers=self._listed_servers,
            segment_server_calls=self._segment_server_calls,
        )
        update: dict[str, object] = {"continuation": continuation}
        if self._plan != self._start.turn_plan():  # a resumed segment brought a new plan
            update["plan"] = self._plan
        workflow.continue_as_new(self._start.model_copy(update=update))

    async def _guard(self, touchpoint: Touchpoint, texts: list[str] | None) -> CompletionMessage | None:
        """Run the touchpoint's shields as one shield_call step; the refusal to answer with, if violated.

        `texts` None: the turn's input messages (read from the store unless the start carried them)."""
        shields = self._plan.input_shields if touchpoint == "user-input" else self._plan.output_shields
        if not shields:
            return None
        step_id = str(workflow.uuid4())
        started_at = self._now()
        if texts is None and self._input_messages:
            texts = [content_as_text(m.content) for m in self._input_messages]
        request = ShieldRequest(
            turn_id=self._start.turn_id,
            session_id=self._start.session_id,
            step_id=step_id,
            touchpoint=touchpoint,
            shield_ids=shields,
            texts=texts or [],
            texts_are_input=texts is None,
            instructions=self._start.agent_config.instructions if self._start.agent_config else "",
        )
        pending = await self._carry(request)
        result = await workflow.execute_activity(
            RUN_SHIELDS_ACTIVITY,
            request.model_copy(update={"pending": pending}),
            result_type=ShieldResult,
            summary=f"shields · {touchpoint}",
            start_to_close_timeout=timedelta(minutes=2),
            retry_policy=RetryPolicy(maximum_attempts=5, non_retryable_error_types=[PROVIDER_REJECTED]),
        )
        self._written(pending)
        violation = result.violation
        self._add_step(steps.shield_call(self._start.turn_id, step_id, started_at, self._now(), violation))
        if violation is None or violation.violation_level != "error":
            return None
        return CompletionMessage(content=violation.user_message or "", stop_reason="end_of_turn")

    async def _resolve_tools(self, toolgroups: list[AgentToolGroup], client_tools: list[str]) -> list[ServerTool]:
        result = await workflow.execute_activity(
            RESOLVE_TOOLS_ACTIVITY,
            ResolveToolsRequest(toolgroups=toolgroups, client_tool_names=client_tools),
            result_type=ResolveToolsResult,
            summary="tools · resolve toolgroups",
            start_to_close_timeout=timedelta(seconds=60),
            retry_policy=RetryPolicy(maximum_attempts=5, non_retryable_error_types=[TOOLS_UNAVAILABLE]),
        )
        return result.tools

    def _offered_tools(self) -> list[ServerTool]:
        return mcp_servers.offered_tools(self._plan, self._server_tools)

    async def _list_new_mcp_servers(self) -> None:
        self._server_tools, listed = await mcp_servers.list_new(
            self._start.turn_id, self._plan, self._listed_servers, self._server_tools
        )
        self._runtime_events += listed

    async def _run_server_tools(
        self, calls: list[ToolCall], tools: dict[str, ServerTool], approved: dict[str, str] | None = None
    ) -> None:
        """Run the calls concurrently, each its own activity and step; a failure is that call's answer.
        `approved`: call id → the approval request it runs under. Calls beyond the segment's
        max_tool_calls are answered unexecuted."""
        approved = approved or {}
        if self._plan.max_tool_calls is not None:
            room = max(0, self._plan.max_tool_calls - self._segment_server_calls)
            calls, over = calls[:room], calls[room:]
            if over:
                reason = (
                    f"Error: not executed: this response reached its limit of {self._plan.max_tool_calls} tool calls."
                )
                answers = [
                    steps.answer(
                        c, reason, mcp_servers.answer_metadata(tools[c.tool_name], approved.get(c.call_id), True)
                    )
                    for c in over
                ]
                now = self._now()
                self._add_step(
                    steps.tool_execution(self._start.turn_id, str(workflow.uuid4()), now, self._now(), over, answers)
                )
            self._segment_server_calls += len(calls)
            if not calls:
                return
        started_at = self._now()
        requests = [
            ToolRunRequest(
                turn_id=self._start.turn_id,
                session_id=self._start.session_id,
                step_id=str(workflow.uuid4()),
                tool=tools[call.tool_name],
                call=call,
                approval_request_id=approved.get(call.call_id),
            )
            for call in calls
        ]
        # Every call carries the pending writes (the inference's step): written once, by whichever
        # activity comes first, and always before that activity's own events.
        pending = await self._carry(*requests)
        responses = await asyncio.gather(
            *(self._run_tool(request.model_copy(update={"pending": pending})) for request in requests)
        )
        step_ids = [request.step_id for request in requests]
        self._written(pending)
        for step_id, call, response in zip(step_ids, calls, responses, strict=True):
            self._add_step(
                steps.tool_execution(self._start.turn_id, step_id, started_at, self._now(), [call], [response])
            )

    async def _run_tool(self, request: ToolRunRequest) -> ToolResponse:
        call = request.call
        try:
            return await workflow.execute_activity(
                RUN_TOOL_ACTIVITY,
                request,
                result_type=ToolResponse,
                summary=f"tool · {call.tool_name}",
                start_to_close_timeout=timedelta(minutes=5),
                heartbeat_timeout=TOOL_HEARTBEAT_TIMEOUT,
                retry_policy=RetryPolicy(maximum_attempts=3, maximum_interval=timedelta(seconds=10)),
                cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            )
        except ActivityError as failure:
            if is_cancelled_exception(failure):
                raise
            cause = failure.cause
            reason = cause.message if isinstance(cause, ApplicationError) else str(cause or failure)
            metadata = mcp_servers.answer_metadata(request.tool, request.approval_request_id, error=True)
            return steps.answer(call, f"Error: the tool failed: {reason}", metadata)

    def _answer_unknown_tools(self, calls: list[ToolCall]) -> None:
        """Calls to tools the agent does not have go back to the model as errors, not to the client."""
        now = self._now()
        answers = [steps.answer(call, f"Error: this agent has no tool named {call.tool_name!r}.") for call in calls]
        self._add_step(
            steps.tool_execution(self._start.turn_id, str(workflow.uuid4()), now, self._now(), calls, answers)
        )

    async def _await_input(
        self, calls: list[ToolCall], approvals: list[ApprovalRequest]
    ) -> ToolResponsesSubmission | None:
        """Pause until the caller submits the calls' results and decides the approval requests;
        None if it does not before the expiry."""
        self._pause.begin(len(self._steps), calls, approvals)
        self._set_status(TurnStatus.AWAITING_INPUT)
        self._describe()
        self._output = CompletionMessage(content="", stop_reason="end_of_message", tool_calls=calls)
        awaiting = [request.approval_request_id for request in approvals]
        await self._save(pause_event_key(self._pause.mark), "turn_awaiting_input", awaiting)
        try:
            await workflow.wait_condition(
                lambda: self._pause.submitted is not None, timeout=self._start.awaiting_input_timeout
            )
        except TimeoutError:
            self._pause.clear()
            return None
        submission = self._pause.take()
        self._set_status(TurnStatus.RUNNING)
        self._output = None
        return submission

    async def _resume(
        self,
        submission: ToolResponsesSubmission,
        calls: list[ToolCall],
        approvals: list[ApprovalRequest],
        paused_at: datetime,
    ) -> list[ToolResponse]:
        """Go on from a pause: start the submission's segment with its plan, record the client's results,
        answer denied calls, run approved ones, and put the followup input after all of them; returns
        the client's results."""
        if submission.segment_id is not None:
            await self._begin_segment(submission.segment_id)
        if submission.plan is not None:
            self._plan = submission.plan
            await self._list_new_mcp_servers()
        first_new = len(self._steps)
        responses: list[ToolResponse] = []
        if calls:
            responses = pauses.client_results(calls, submission)
            self._add_step(
                steps.tool_execution(
                    self._start.turn_id, str(workflow.uuid4()), paused_at, self._now(), calls, responses
                )
            )
        if approvals:
            denied, answers, approved = pauses.decide(approvals, submission.approvals)
            if denied:
                self._add_step(
                    steps.tool_execution(
                        self._start.turn_id, str(workflow.uuid4()), paused_at, self._now(), denied, answers
                    )
                )
            if approved:
                tools = {tool.name: tool for tool in self._server_tools}
                ids = {request.call.call_id: request.approval_request_id for request in approved}
                await self._run_server_tools([request.call for request in approved], tools, ids)
        followups = [message for message in submission.followup_messages if isinstance(message, UserMessage)]
        if followups:
            last = self._steps[-1]
            if len(self._steps) - 1 >= max(first_new, self._saved_steps) and isinstance(last, ToolExecutionStep):
                self._steps[-1] = last.model_copy(update={"followup_messages": followups})
            else:  # the last result is stored already: the input follows as a step of its own
                now = self._now()
                step = steps.tool_execution(self._start.turn_id, str(workflow.uuid4()), now, now, [], [], followups)
                self._add_step(step)
        return responses

    async def _begin_segment(self, segment_id: str) -> None:
        """Mark where the segment (a response) begins in the turn's events, before anything of it; its
        model calls count afresh against max_infer_iters."""
        self._runtime_events.append(runtime_event(f"segment:{segment_id}", "segment_started", segment_id=segment_id))
        self._inferences = 0
        self._segment_server_calls = 0
        segments = workflow.info().typed_search_attributes.get(RESPONSE_ID) or []
        workflow.upsert_search_attributes([RESPONSE_ID.value_set([*segments, segment_id])])
        await self._write(
            TurnProgress(
                turn_id=self._start.turn_id,
                session_id=self._start.session_id,
                pending=self._pending(),
                status=self._status,
            )
        )

    async def _finish(self, message: CompletionMessage) -> TurnOutcome:
        self._conclude(TurnStatus.COMPLETED, message, self._now())
        return self._kept(await self._save(f"turn:complete:{len(self._steps)}", "turn_complete"))

    def _record_end(self, message: CompletionMessage, finished: TurnFinished) -> TurnOutcome:
        """The end the inference activity wrote (its last step, status, output and time), as this run's."""
        self._saved_steps = len(self._steps)
        self._stored_status = TurnStatus.COMPLETED
        self._last_time = max(self._last_time, finished.completed_at)
        self._conclude(TurnStatus.COMPLETED, message, finished.completed_at)
        return self._outcome()

    def _conclude(self, status: TurnStatus, output: CompletionMessage | None, completed_at: datetime) -> None:
        """The turn's end as this run holds it: status (and the UI's view of it), output and time."""
        self._output = output
        self._set_status(status)
        self._describe()
        self._completed_at = completed_at

    async def _end(self, status: TurnStatus, reason: str) -> TurnOutcome:
        """End the turn without an answer (failed, cancelled, expired), keeping its steps so far."""
        if self._saving is not None and not self._saving.done():
            await self._saving
        self._pause.clear()
        self._error = reason
        self._conclude(status, None, self._now())
        return self._kept(await self._save(f"turn:{status.value}:{len(self._steps)}", "error"))

    def _kept(self, ended: TurnOutcome | None) -> TurnOutcome:
        """The outcome: this run's end, or the one the store had already and kept (an answer its
        inference activity wrote in the very activation a cancel arrived in, which then ends here)."""
        if ended is None or ended.status == self._status:
            return self._outcome()
        self._output = None
        self._error = ended.error
        self._set_status(ended.status)
        self._describe()
        return ended

    def _outcome(self) -> TurnOutcome:
        """The workflow's result: a summary. The turn (which can be megabytes) is in the store."""
        return TurnOutcome(turn_id=self._start.turn_id, status=self._status, steps=len(self._steps), error=self._error)

    def _pending(self) -> PendingWrites:
        # A turn resumed after a pause is running again: the next write says so, so readers of the
        # store stop seeing awaiting_input as soon as the turn's next step begins.
        resumed = self._status == TurnStatus.RUNNING and self._stored_status != TurnStatus.RUNNING
        return PendingWrites(
            first_new_step=self._saved_steps,
            new_steps=self._steps[self._saved_steps :],
            status=TurnStatus.RUNNING if resumed else None,
            session_id=self._start.session_id if resumed else None,
            agent_id=self._start.agent_id if resumed else None,
            step_events=True,
            events=list(self._runtime_events),
        )

    async def _carry(self, *requests: BaseModel) -> PendingWrites:
        """The pending writes for these requests to carry (each request is built without them).

        Steps ride along with the next activity's input, saving a store round trip per step. When
        they would not fit in its payload (many large tool results at once), a local activity,
        whose input never enters the history, writes them first. A request too large even alone
        fails the turn instead of failing its workflow task forever.
        """
        own = max(_size(request) for request in requests)
        if own > PAYLOAD_BUDGET_BYTES:
            raise _TooLarge(f"a request of {own:,} bytes, more than a turn can carry ({PAYLOAD_BUDGET_BYTES:,})")
        pending = self._pending()
        if pending.new_steps and own + _size(pending) > PAYLOAD_BUDGET_BYTES and workflow.patched(CARRY_STEPS_PATCH):
            await self._write(
                TurnProgress(
                    turn_id=self._start.turn_id, session_id=self._start.session_id, pending=pending, status=self._status
                )
            )
            pending = self._pending()
        return pending

    def _written(self, pending: PendingWrites) -> None:
        written = {event.key for event in pending.events}
        self._runtime_events = [event for event in self._runtime_events if event.key not in written]
        self._stored_status = pending.status or self._stored_status
        self._saved_steps = max(self._saved_steps, pending.first_new_step + len(pending.new_steps))

    async def _save(
        self,
        event_key: str,
        event: Literal["turn_awaiting_input", "turn_complete", "error"],
        awaiting: list[str] | None = None,
    ) -> TurnOutcome | None:
        """Write the pending steps and events with the turn's status, then its final event; the
        outcome of a turn that had ended already (the store keeps that end)."""
        pending = self._pending()
        progress = TurnProgress(
            turn_id=self._start.turn_id,
            session_id=self._start.session_id,
            pending=pending,
            status=self._status,
            output_message=self._output,
            completed_at=self._completed_at,
            error=self._error,
            event_key=event_key,
            event=event,
            agent_id=self._start.agent_id,
            awaiting=awaiting or [],
        )
        # Shielded: a cancellation must not interleave a later write with this one (see _end).
        self._saving = asyncio.ensure_future(self._write(progress))
        return await asyncio.shield(self._saving)

    async def _write(self, progress: TurnProgress) -> TurnOutcome | None:
        # A local activity: a store write takes milliseconds, and running it inside the workflow
        # task saves a round trip through the server per status change. Its writes are keyed, so
        # the re-run after a worker crash is harmless.
        ended = await workflow.execute_local_activity(
            SAVE_PROGRESS_ACTIVITY,
            progress,
            result_type=TurnOutcome | None,  # None from releases before the store kept a turn's end
            summary=f"store · {progress.status.value}",
            start_to_close_timeout=timedelta(seconds=10),
            retry_policy=_STORE_RETRY,
        )
        self._written(progress.pending)
        self._stored_status = ended.status if ended else progress.status
        return ended
