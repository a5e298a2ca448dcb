"""Waiting for the caller: a pause for client tool results and approvals, the resume that follows, and the
segments (responses) a resume may begin."""

from __future__ import annotations

from datetime import datetime

from temporalio import workflow

from workflows.turn_steps.shields import ShieldSteps
from workflows.turn_steps.tools import ToolSteps

APPROVAL_DEADLINE_PATCH = "approval-deadline-v1"
"""A pause of approvals with a deadline (DA_APPROVAL_TIMEOUT) waits on a timer that denies them when it fires."""

with workflow.unsafe.imports_passed_through():
    from domain.content import CompletionMessage, ToolCall, ToolResponse, UserMessage, content_as_text
    from domain.turn_settings import ApprovalRequest
    from domain.turns import ToolExecutionStep, TurnStatus
    from workflows import pauses, steps
    from workflows.contracts import (
        ToolResponsesSubmission,
        TurnProgress,
        pause_event_key,
        runtime_event,
    )
    from workflows.search_attributes import RESPONSE_ID


class ClientInputSteps(ToolSteps, ShieldSteps):
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
            in_time = await self._decided_in_time(calls, approvals)
        except TimeoutError:
            self._pause.clear()
            return None
        if not in_time:  # nothing decided by the deadline: the system denies every pending approval itself
            self._pause.submitted = pauses.timed_out(approvals, self._now())
        submission = self._pause.take()
        self._set_status(TurnStatus.RUNNING)
        self._output = None
        return submission

    async def _decided_in_time(self, calls: list[ToolCall], approvals: list[ApprovalRequest]) -> bool:
        """Wait for the submission; False if the approvals' deadline came first (a pause of approvals alone:
        one that also waits for a client's output waits for it as before). Raises TimeoutError at the expiry."""
        expiry = self._start.awaiting_input_timeout
        deadline = None if calls else pauses.approval_deadline(self._plan.mcp_servers, approvals)
        # Only a pause with a deadline asks: histories of earlier releases never had one, and replay as they ran.
        if deadline is not None and (expiry is None or deadline < expiry) and workflow.patched(APPROVAL_DEADLINE_PATCH):
            try:
                await workflow.wait_condition(lambda: self._pause.submitted is not None, timeout=deadline)
                return True
            except TimeoutError:
                return self._pause.submitted is not None
        await workflow.wait_condition(lambda: self._pause.submitted is not None, timeout=expiry)
        return True

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
            # The turn's compaction stays: its model calls go on reading the summary it began with.
            self._plan = submission.plan.model_copy(update={"compact_threshold": self._plan.compact_threshold})
            await self._list_new_mcp_servers()
        if submission.local_inference is not None:
            self._local_inference = submission.local_inference
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
                by_id = {decision.approval_request_id: decision for decision in submission.approvals}
                records = {request.call.call_id: by_id[request.approval_request_id].record() for request in approved}
                await self._run_server_tools([request.call for request in approved], tools, ids, records)
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

    async def _take_reopening_results(self, responses: list[ToolResponse]) -> CompletionMessage | None:
        """A client that parses tool calls from the answer itself (ReAct) resumes a completed turn:
        its results become a tool_execution step with no calls of ours, and the turn goes on."""
        now = self._now()
        self._add_step(
            steps.tool_execution(self._start.turn_id, str(workflow.uuid4()), now, self._now(), [], responses)
        )
        return await self._guard("user-input", [content_as_text(r.content) for r in responses])
