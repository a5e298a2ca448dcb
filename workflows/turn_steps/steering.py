"""Steering: user input for a running turn, taken at its next safe boundary.

The `steer` update is accepted only while the turn runs a segment that may be steered (its model call's activity
never writes the turn's end, or holds back when a steer is marked: `cut_steering`; no output shield, no compaction,
no Agents session) — or, in a `cut_steering` turn, one that raced the turn's pause for its caller — and one steer at
a time; once accepted it is in the workflow's history, so a crash of the API or of the worker loses nothing and
replays apply it once. The boundary is the end of the model call in flight, whose output is kept and never asked
again: a response's call (`steer-cut-v1`, workflows/turn_steps/inference.py) stops at its next text token once the
API has marked the steer (a local call of a `cut_steering` turn also before its first, and it writes no end then;
the workflow waits for the update the mark announces), and returns the text so far, so the cut reply is the call's
result in history. At that end — where the turn would end, or before its next model call — the current segment ends
as a pause that waits for nothing (its response completes, or ends incomplete when cut), the steer's segment begins,
and its input follows as a step of its own, which the next model call reads after everything before it. A turn that
pauses for client tool results or approvals first keeps the input for the caller's resumption (`_steer_into`).

An Agents API session's turn (a steer without a segment) is one whole: at the boundary its input simply joins
the turn as that step, no pause is written, and steers accepted before the boundary are taken together.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from workflows.turn_steps.client_input import ClientInputSteps

with workflow.unsafe.imports_passed_through():
    from domain.turns import TurnStatus
    from workflows import steps
    from workflows.contracts import SteerSubmission, ToolResponsesSubmission

STEER_PATCH = "steer-v1"
NOT_ACTIVE, PENDING, UNSUPPORTED, INVALID = (
    "response_not_active",
    "too_many_pending_steers",
    "steering_not_supported",
    "invalid_input",
)
"""Why the update is rejected: the error's type, which is the SDK's `response.steer.failed` code."""


class SteeringSteps(ClientInputSteps):
    def _check_steer(self, submission: SteerSubmission) -> None:
        start = self._start
        # One that raced the pause of a turn whose steers mark the cut first rides on the caller's resumption.
        raced_the_pause = start.cut_steering and self._status == TurnStatus.AWAITING_INPUT
        if self._status != TurnStatus.RUNNING and not raced_the_pause:
            raise ApplicationError(f"Turn {start.turn_id} is {self._status.value}, not running", type=NOT_ACTIVE)
        pending = self._steer
        if pending is not None and (pending.segment_id is not None or submission.segment_id is not None):
            raise ApplicationError("The response already has a steer pending; wait for its successor", type=PENDING)
        if not self._steerable() or start.session_id:
            raise ApplicationError(
                "This turn cannot be steered (a response made over HTTP, output shields, compaction, "
                "a llama-stack session, or a turn of an earlier release)",
                type=UNSUPPORTED,
            )
        if not submission.messages:
            raise ApplicationError("A steer carries at least one user message", type=INVALID)

    def _take_steer(self, submission: SteerSubmission) -> str:
        pending = self._steer
        if pending is None:
            self._steer = submission
        else:  # segmentless steers only (_check_steer): the input of both, in order
            self._steer = pending.model_copy(update={"messages": [*pending.messages, *submission.messages]})
        return submission.steer_id

    async def _steer_boundary(self) -> bool:
        """Apply the accepted steer, if any; true when it was (the loop then calls the model again)."""
        steer = self._steer
        if steer is None or not workflow.patched(STEER_PATCH):
            return False
        self._steer = None
        self._output = None
        if steer.segment_id is None:
            self._inferences = 0  # new user input: its model calls count afresh, as a new segment's do
        else:
            await self._save(f"steer:{steer.steer_id}", "turn_awaiting_input", [])
            await self._begin_segment(steer.segment_id)
            # The update's acceptance reaches the API when this workflow task ends: a local model call would hold
            # it, and the successor's events with it, until the call's end.
            self._regular_call_next = self._start.cut_steering
        now = self._now()
        self._add_step(
            steps.tool_execution(self._start.turn_id, str(workflow.uuid4()), now, now, [], [], list(steer.messages))
        )
        return True

    def _steer_into(self, submission: ToolResponsesSubmission) -> ToolResponsesSubmission:
        """A steer accepted before the turn paused for its caller rides on the caller's resumption: its input goes
        first among the resumption's user input (after the tool results, which answer the paused calls), once;
        its own segment never begins."""
        steer = self._steer
        if steer is None or not workflow.patched(STEER_PATCH):
            return submission
        self._steer = None
        return submission.model_copy(update={"followup_messages": [*steer.messages, *submission.followup_messages]})
