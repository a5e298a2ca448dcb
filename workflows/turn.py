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
    from domain.agents import AgentToolGroup, ToolConfig
    from domain.content import CompletionMessage, ToolCall, ToolResponse, content_as_text
    from domain.events import (
        KeyedEvent,
        StepComplete,
        chunk_of,
    )
    from domain.turns import InferenceStep, ShieldCallStep, Step, ToolExecutionStep, Turn, TurnStatus
    from workflows.contracts import (
        DOCUMENT_UNAVAILABLE,
        FETCH_DOCUMENTS_ACTIVITY,
        INFER_ACTIVITY,
        INFERENCE_HEARTBEAT_TIMEOUT,
        LOAD_STEPS_ACTIVITY,
        NOT_AWAITING_INPUT,
        PROVIDER_REJECTED,
        RESOLVE_TOOLS_ACTIVITY,
        RUN_SHIELDS_ACTIVITY,
        RUN_TOOL_ACTIVITY,
        SAVE_PROGRESS_ACTIVITY,
        TOOL_HEARTBEAT_TIMEOUT,
        TOOL_RESPONSES_MISMATCH,
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
        TurnProgress,
        TurnStart,
        pause_event_key,
    )
    from workflows.search_attributes import TURN_STATUS


def _step_line(step: Step) -> str:
    if isinstance(step, InferenceStep):
        calls = ", ".join(f"`{call.tool_name}`" for call in step.model_response.tool_calls)
        return f"inference → {'calls ' + calls if calls else 'answered'}"
    if isinstance(step, ToolExecutionStep):
        return "tool_execution · " + ", ".join(f"`{call.tool_name}`" for call in step.tool_calls)
    return f"{step.step_type}"


_STORE_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=200), maximum_interval=timedelta(seconds=10))
_TICK = timedelta(microseconds=1)


@workflow.defn(name="AgentTurn")
class TurnWorkflow:
    @workflow.init
    def __init__(self, start: TurnStart) -> None:
        self._start = start
        self._tool_config: ToolConfig = start.tool_config or start.agent_config.tool_config or ToolConfig()
        self._status = TurnStatus.RUNNING
        self._stored_status = TurnStatus.RUNNING
        self._steps: list[Step] = []
        self._saved_steps = 0
        self._outbox: list[KeyedEvent] = []
        self._output: CompletionMessage | None = None
        self._completed_at: datetime | None = None
        self._error: str | None = None
        self._inferences = 0
        self._pause_mark = 0
        self._pending_calls: list[ToolCall] = []
        self._submitted: list[ToolResponse] | None = None
        self._last_time = start.started_at
        self._saving: asyncio.Future[None] | None = None
        self._server_tools: list[ServerTool] = []
        self._input_messages = start.input_messages
        self._ignored_signal: str | None = None
        """Why the last tool-results signal changed nothing, shown in the current details."""

    @workflow.run
    async def run(self, start: TurnStart) -> Turn:
        try:
            if refusal := await self._open(start):
                return await self._finish(refusal)
            return await self._converse(start)
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
        client_tools = sorted(tool.name for tool in start.agent_config.client_tools or [])
        toolgroups = start.toolgroups if start.toolgroups is not None else start.agent_config.toolgroups
        if start.continuation is not None:
            await self._restore(start.continuation)
            if not self._server_tools and toolgroups:
                self._server_tools = await self._resolve_tools(toolgroups, client_tools)
            return await self._take_reopening_results(start.reopened_with) if start.reopened_with else None
        if start.document_urls:
            await self._fetch_documents(start.document_urls)
        if toolgroups:
            self._server_tools = await self._resolve_tools(toolgroups, client_tools)
        return await self._guard("user-input", [content_as_text(m.content) for m in self._input_messages])

    async def _converse(self, start: TurnStart) -> Turn:
        """Infer, run or hand out the tool calls, and again, until the model answers or the limit is hit."""
        client_tools = {tool.name for tool in start.agent_config.client_tools or []}
        server_tools = {tool.name: tool for tool in self._server_tools}
        max_inferences = start.agent_config.max_infer_iters or 10
        while True:
            if workflow.info().get_current_history_length() >= start.continue_as_new_after_events:
                await self._continue_as_new()
            message = await self._infer()
            done = not message.tool_calls or message.stop_reason == "out_of_tokens"
            if not done and self._inferences >= max_inferences:
                # The calls stay unexecuted; end_of_turn tells clients not to resume.
                message, done = message.model_copy(update={"stop_reason": "end_of_turn"}), True
            calls = [] if done else message.tool_calls
            server_calls = [call for call in calls if call.tool_name in server_tools]
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
            if client_calls:
                responses = await self._await_client_tools(client_calls)
                if responses is None:
                    return await self._end(
                        TurnStatus.EXPIRED,
                        f"Turn {start.turn_id} expired: no client tool results within "
                        f"{start.awaiting_input_timeout}. Start a new turn.",
                    )
                if refusal := await self._guard("user-input", [content_as_text(r.content) for r in responses]):
                    return await self._finish(refusal)

    @workflow.query
    def turn(self) -> Turn:
        """The turn as it stands: status, steps so far, and the tool calls it waits for."""
        return Turn(
            turn_id=self._start.turn_id,
            session_id=self._start.session_id,
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
        # Two submissions can both pass validation within one workflow task; only the first counts.
        self._check_tool_responses(submission)
        self._submitted = submission.tool_responses
        return self._pause_mark

    @workflow.signal(name=TOOL_RESPONSES_SIGNAL)
    def submit_tool_responses_signal(self, raw: RawValue) -> None:
        """The update's results, sent as a signal: what an operator sends from the Temporal UI or CLI.

        A signal cannot answer, so one that does not fit the pause changes nothing but the current
        details, which say why. Its input is read here rather than by the SDK, which would drop
        an undecodable signal with only a worker log line to show for it.
        """
        try:
            submission = workflow.payload_converter().from_payload(raw.payload, ToolResponsesSubmission)
            self._check_tool_responses(submission)
        except ApplicationError as refused:
            self._ignore_signal(refused.message)
            return
        except (ValueError, TypeError) as unreadable:  # not JSON, or not the submission's shape
            shape = '{"tool_responses": [{"call_id": …, "tool_name": …, "content": …}]}'
            self._ignore_signal(f"its input is not {shape}: {' '.join(str(unreadable).split())[:300]}")
            return
        self._ignored_signal = None
        self._submitted = submission.tool_responses

    def _ignore_signal(self, reason: str) -> None:
        self._ignored_signal = reason
        workflow.logger.warning("tool results signal ignored: %s", reason)
        self._describe()

    @submit_tool_responses.validator
    def _check_tool_responses(self, submission: ToolResponsesSubmission) -> None:
        if self._status != TurnStatus.AWAITING_INPUT or self._submitted is not None:
            raise ApplicationError(
                f"Turn {self._start.turn_id} is {self._status.value}, not awaiting input", type=NOT_AWAITING_INPUT
            )
        expected = [call.call_id for call in self._pending_calls]
        given = [response.call_id for response in submission.tool_responses]
        if sorted(given) != sorted(expected):
            raise ApplicationError(
                f"Turn {self._start.turn_id} awaits responses for call_ids {expected}, got {given}: "
                "send exactly one response per pending call",
                type=TOOL_RESPONSES_MISMATCH,
            )

    def _set_status(self, status: TurnStatus) -> None:
        self._status = status
        workflow.upsert_search_attributes([TURN_STATUS.value_set(status.value)])

    def _describe(self) -> None:
        """Keep the UI's "current details" telling what the turn did and what it waits for."""
        lines = [f"**Status:** {self._status.value}", "", f"**Steps so far:** {len(self._steps)}"]
        lines += [f"{i}. {_step_line(step)}" for i, step in enumerate(self._steps, start=1)]
        if self._pending_calls:
            lines += ["", "**Waiting for client tool results:**"]
            lines += [f"- `{call.tool_name}` (call_id `{call.call_id}`)" for call in self._pending_calls]
        if self._error:
            lines += ["", f"**Error:** {self._error}"]
        if self._ignored_signal:
            lines += ["", f"**Last signal ignored:** {self._ignored_signal}"]
        workflow.set_current_details("\n".join(lines))

    def _now(self) -> datetime:
        """workflow.now(), nudged so that consecutive timestamps strictly increase (clients compare them)."""
        self._last_time = max(workflow.now(), self._last_time + _TICK)
        return self._last_time

    def _add_step(self, step: Step) -> None:
        self._steps.append(step)
        self._describe()
        payload = StepComplete(step_type=step.step_type, step_id=step.step_id, step_details=step)
        self._outbox.append(KeyedEvent(key=f"{step.step_id}:complete", body=chunk_of(payload).model_dump(mode="json")))

    async def _infer(self) -> CompletionMessage:
        step_id = str(workflow.uuid4())
        started_at = self._now()
        pending = self._pending()
        request = InferenceRequest(
            turn_id=self._start.turn_id,
            session_id=self._start.session_id,
            step_id=step_id,
            agent_config=self._start.agent_config,
            tool_config=self._tool_config,
            server_tools=self._server_tools,
            pending=pending,
        )
        result = await workflow.execute_activity(
            INFER_ACTIVITY,
            request,
            result_type=InferenceResult,
            summary=f"inference · {self._start.agent_config.model}",
            start_to_close_timeout=timedelta(minutes=10),
            heartbeat_timeout=INFERENCE_HEARTBEAT_TIMEOUT,
            # A cancelled turn's last events are written only after its model call has stopped.
            cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            retry_policy=RetryPolicy(
                initial_interval=timedelta(seconds=1),
                maximum_interval=timedelta(seconds=30),
                maximum_attempts=self._start.inference_max_attempts,
                non_retryable_error_types=[PROVIDER_REJECTED],
            ),
        )
        self._written(pending)
        self._inferences += 1
        message = result.message
        self._add_step(
            InferenceStep(
                turn_id=self._start.turn_id,
                step_id=step_id,
                started_at=started_at,
                completed_at=self._now(),
                model_response=message,
            )
        )
        return message

    async def _fetch_documents(self, urls: list[str]) -> None:
        result = await workflow.execute_activity(
            FETCH_DOCUMENTS_ACTIVITY,
            FetchDocumentsRequest(session_id=self._start.session_id, turn_id=self._start.turn_id, urls=urls),
            result_type=FetchDocumentsResult,
            summary=f"documents · fetch {len(urls)}",
            start_to_close_timeout=timedelta(minutes=2),
            retry_policy=RetryPolicy(maximum_attempts=3, non_retryable_error_types=[DOCUMENT_UNAVAILABLE]),
        )
        self._input_messages = result.input_messages

    async def _restore(self, continuation: Continuation) -> None:
        self._inferences = continuation.inferences
        self._last_time = continuation.last_time
        self._server_tools = continuation.server_tools
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
            ToolExecutionStep(
                turn_id=self._start.turn_id,
                step_id=str(workflow.uuid4()),
                started_at=now,
                completed_at=self._now(),
                tool_calls=[],
                tool_responses=responses,
            )
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
        )
        workflow.continue_as_new(self._start.model_copy(update={"continuation": continuation}))

    async def _guard(self, touchpoint: Touchpoint, texts: list[str]) -> CompletionMessage | None:
        """Run the touchpoint's shields as one shield_call step; the refusal to answer with, if violated."""
        config = self._start.agent_config
        shields = (config.input_shields if touchpoint == "user-input" else config.output_shields) or []
        if not shields:
            return None
        step_id = str(workflow.uuid4())
        started_at = self._now()
        pending = self._pending()
        result = await workflow.execute_activity(
            RUN_SHIELDS_ACTIVITY,
            ShieldRequest(
                turn_id=self._start.turn_id,
                session_id=self._start.session_id,
                step_id=step_id,
                touchpoint=touchpoint,
                shield_ids=shields,
                texts=texts,
                instructions=config.instructions,
                pending=pending,
            ),
            result_type=ShieldResult,
            summary=f"shields · {touchpoint}",
            start_to_close_timeout=timedelta(minutes=2),
            retry_policy=RetryPolicy(maximum_attempts=5, non_retryable_error_types=[PROVIDER_REJECTED]),
        )
        self._written(pending)
        violation = result.violation
        self._add_step(
            ShieldCallStep(
                turn_id=self._start.turn_id,
                step_id=step_id,
                started_at=started_at,
                completed_at=self._now(),
                violation=violation,
            )
        )
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

    async def _run_server_tools(self, calls: list[ToolCall], tools: dict[str, ServerTool]) -> None:
        """Run the calls concurrently, each its own activity and step; a failure is that call's answer."""
        started_at = self._now()
        step_ids = [str(workflow.uuid4()) for _ in calls]
        # Every call carries the pending writes (the inference's step): written once, by whichever
        # activity comes first, and always before that activity's own events.
        pending = self._pending()
        responses = await asyncio.gather(
            *(
                self._run_tool(step_id, call, tools[call.tool_name], pending)
                for step_id, call in zip(step_ids, calls, strict=True)
            )
        )
        self._written(pending)
        for step_id, call, response in zip(step_ids, calls, responses, strict=True):
            self._add_step(
                ToolExecutionStep(
                    turn_id=self._start.turn_id,
                    step_id=step_id,
                    started_at=started_at,
                    completed_at=self._now(),
                    tool_calls=[call],
                    tool_responses=[response],
                )
            )

    async def _run_tool(self, step_id: str, call: ToolCall, tool: ServerTool, pending: PendingWrites) -> ToolResponse:
        try:
            return await workflow.execute_activity(
                RUN_TOOL_ACTIVITY,
                ToolRunRequest(
                    turn_id=self._start.turn_id,
                    session_id=self._start.session_id,
                    step_id=step_id,
                    tool=tool,
                    call=call,
                    pending=pending,
                ),
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
            return ToolResponse(
                call_id=call.call_id, tool_name=call.tool_name, content=f"Error: the tool failed: {reason}"
            )

    def _answer_unknown_tools(self, calls: list[ToolCall]) -> None:
        """Calls to tools the agent does not have go back to the model as errors, not to the client."""
        now = self._now()
        self._add_step(
            ToolExecutionStep(
                turn_id=self._start.turn_id,
                step_id=str(workflow.uuid4()),
                started_at=now,
                completed_at=self._now(),
                tool_calls=calls,
                tool_responses=[
                    ToolResponse(
                        call_id=call.call_id,
                        tool_name=call.tool_name,
                        content=f"Error: this agent has no tool named {call.tool_name!r}.",
                    )
                    for call in calls
                ],
            )
        )

    async def _await_client_tools(self, calls: list[ToolCall]) -> list[ToolResponse] | None:
        """Pause until the caller submits the calls' results; None if it does not before the expiry."""
        self._pending_calls = calls
        self._set_status(TurnStatus.AWAITING_INPUT)
        self._describe()
        self._pause_mark = len(self._steps)
        self._output = CompletionMessage(content="", stop_reason="end_of_message", tool_calls=calls)
        paused_at = self._now()
        await self._save(pause_event_key(self._pause_mark), "turn_awaiting_input")
        try:
            await workflow.wait_condition(
                lambda: self._submitted is not None, timeout=self._start.awaiting_input_timeout
            )
        except TimeoutError:
            self._pending_calls = []
            return None
        by_call = {response.call_id: response for response in self._submitted or []}
        responses = [by_call[call.call_id] for call in calls]
        self._submitted = None
        self._pending_calls = []
        self._ignored_signal = None
        self._set_status(TurnStatus.RUNNING)
        self._output = None
        self._add_step(
            ToolExecutionStep(
                turn_id=self._start.turn_id,
                step_id=str(workflow.uuid4()),
                started_at=paused_at,
                completed_at=self._now(),
                tool_calls=calls,
                tool_responses=responses,
            )
        )
        return responses

    async def _finish(self, message: CompletionMessage) -> Turn:
        self._set_status(TurnStatus.COMPLETED)
        self._describe()
        self._output = message
        self._completed_at = self._now()
        await self._save(f"turn:complete:{len(self._steps)}", "turn_complete")
        return self.turn()

    async def _end(self, status: TurnStatus, reason: str) -> Turn:
        """End the turn without an answer (failed, cancelled, expired), keeping its steps so far."""
        if self._saving is not None and not self._saving.done():
            await self._saving
        self._pending_calls = []
        self._output = None
        self._error = reason
        self._set_status(status)
        self._describe()
        self._completed_at = self._now()
        await self._save(f"turn:{status.value}:{len(self._steps)}", "error")
        return self.turn()

    def _pending(self) -> PendingWrites:
        # A turn resumed after a pause is running again: the next write says so, so readers of the
        # store stop seeing awaiting_input as soon as the turn's next step begins.
        resumed = self._status == TurnStatus.RUNNING and self._stored_status != TurnStatus.RUNNING
        return PendingWrites(
            events=list(self._outbox),
            first_new_step=self._saved_steps,
            new_steps=self._steps[self._saved_steps :],
            status=TurnStatus.RUNNING if resumed else None,
            session_id=self._start.session_id if resumed else None,
            agent_id=self._start.agent_id if resumed else None,
        )

    def _written(self, pending: PendingWrites) -> None:
        self._stored_status = pending.status or self._stored_status
        self._outbox = self._outbox[len(pending.events) :]
        self._saved_steps = max(self._saved_steps, pending.first_new_step + len(pending.new_steps))

    async def _save(self, event_key: str, event: Literal["turn_awaiting_input", "turn_complete", "error"]) -> None:
        """Write the pending steps and events with the turn's status, then its final event."""
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
        )
        # Shielded: a cancellation must not interleave a later write with this one (see _end).
        self._saving = asyncio.ensure_future(self._write(progress))
        await asyncio.shield(self._saving)

    async def _write(self, progress: TurnProgress) -> None:
        # A local activity: a store write takes milliseconds, and running it inside the workflow
        # task saves a round trip through the server per status change. Its writes are keyed, so
        # the re-run after a worker crash is harmless.
        await workflow.execute_local_activity(
            SAVE_PROGRESS_ACTIVITY,
            progress,
            summary=f"store · {progress.status.value}",
            start_to_close_timeout=timedelta(seconds=10),
            retry_policy=_STORE_RETRY,
        )
        self._written(progress.pending)
        self._stored_status = progress.status
