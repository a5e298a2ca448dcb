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

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception

from workflows.turn_steps.continuation import Continuations
from workflows.turn_steps.inference import InferenceSteps
from workflows.turn_steps.state import TooLarge
from workflows.turn_steps.steering import SteeringSteps

with workflow.unsafe.imports_passed_through():
    from domain.content import CompletionMessage, content_as_text
    from domain.turns import Turn, TurnStatus
    from workflows import compaction, mcp_servers, pauses, turn_end
    from workflows.contracts import (
        DOCUMENT_UNAVAILABLE,
        SPEND_LIMIT_SIGNAL,
        STEER_UPDATE,
        TOOL_RESPONSES_SIGNAL,
        TOOLS_UNAVAILABLE,
        SteerSubmission,
        ToolResponsesSubmission,
        TurnOutcome,
        TurnStart,
    )

CONTINUE_AS_NEW_HISTORY_BYTES = 10_000_000
"""A turn whose history reaches this size continues as new, as at DA_CONTINUE_AS_NEW_EVENTS events:
large model replies (up to 1.5 MB each) would reach Temporal's 50 MB history limit long before."""


@workflow.defn(name="AgentTurn")
class TurnWorkflow(InferenceSteps, SteeringSteps, Continuations):
    @workflow.init
    def __init__(self, start: TurnStart) -> None:
        super().__init__(start)

    @workflow.run
    async def run(self, start: TurnStart) -> TurnOutcome:
        try:
            if refusal := await self._open(start):
                return await self._finish(refusal)
            await self._compact(start)
            return await self._converse(start)
        except TooLarge as too_large:
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

    async def _compact(self, start: TurnStart) -> None:
        """A new turn that asks for compaction first summarises its prior context if it is over the threshold
        (workflows/compaction.py); a continued or reopened run did so already, or never will."""
        threshold = self._plan.compact_threshold
        if threshold is None or start.continuation is not None or start.reopened_with:
            return
        if workflow.patched(compaction.COMPACTION_PATCH):
            await self._within_budget_for("compaction")
            await compaction.compact_turn(
                start.turn_id, self._plan.settings_id, start.session_id, threshold, start.spend_session_id
            )

    async def _converse(self, start: TurnStart) -> TurnOutcome:
        """Infer, run or hand out the tool calls, and again, until the model answers or the limit is hit."""
        while True:
            # Before the next model call (and before any continue-as-new). Not before a cut_steering run's first: a
            # steer taken that early was marked for it, and the call ends at the mark, with what a worker that
            # died had streamed of it, without asking the model again (activities/inference.py).
            if self._inferences or not start.cut_steering:
                await self._steer_boundary()
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
            if done and await self._steer_boundary():
                continue
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
                submission = self._steer_into(submission)
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

    @workflow.update(name=STEER_UPDATE)
    def steer(self, submission: SteerSubmission) -> str:
        """Queue user input for the running turn (workflows/turn_steps/steering.py); returns the steer's id."""
        return self._take_steer(submission)

    @steer.validator
    def _validate_steer(self, submission: SteerSubmission) -> None:
        self._check_steer(submission)

    @workflow.signal(name=SPEND_LIMIT_SIGNAL)
    def spend_limit_changed(self) -> None:
        """The session's spending limit was raised or removed: a turn held at its next model call checks again."""
        self._spend_signals += 1

    @submit_tool_responses.validator
    def _check_tool_responses(self, submission: ToolResponsesSubmission) -> None:
        self._pause.check(self._start.turn_id, self._status, submission)
