"""A turn's pause: what it waits for, which submissions end it, and what the caller decided.

The turn pauses (awaiting_input) for its client tool calls' results and for the caller's decision
on each MCP call that needs approval; one submission, by update or by signal, brings all of them.
Runs inside the workflow sandbox: deterministic code.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from domain.content import ToolCall, ToolResponse, UserMessage
    from domain.turn_settings import SYSTEM_DECIDER, TIMED_OUT, ApprovalDecision, ApprovalRequest, McpServer
    from domain.turns import TurnStatus
    from workflows import steps
    from workflows.contracts import NOT_AWAITING_INPUT, TOOL_RESPONSES_MISMATCH, ToolResponsesSubmission

_SUBMISSION_SHAPE = '{"tool_responses": [{"call_id": …, "tool_name": …, "content": …}]}'


class Pause:
    """The pending calls and approval requests of the current pause, and the submission once it comes."""

    def __init__(self) -> None:
        self.mark = 0
        """The number of the pause (the turn's step count when it began), which the update returns."""
        self.calls: list[ToolCall] = []
        self.approvals: list[ApprovalRequest] = []
        self.submitted: ToolResponsesSubmission | None = None
        self.ignored_signal: str | None = None
        """Why the last tool-results signal changed nothing, shown in the current details."""

    def begin(self, mark: int, calls: list[ToolCall], approvals: list[ApprovalRequest]) -> None:
        self.mark = mark
        self.calls = calls
        self.approvals = approvals

    def clear(self) -> None:
        """Nothing is awaited any more (the pause ended or expired, or the turn ended)."""
        self.calls = []
        self.approvals = []

    def take(self) -> ToolResponsesSubmission:
        """The submission that ended the pause, which ends it."""
        submission = self.submitted
        assert submission is not None
        self.submitted = None
        self.clear()
        self.ignored_signal = None
        return submission

    def check(self, turn_id: str, status: TurnStatus, submission: ToolResponsesSubmission) -> None:
        """Refuse a submission that does not answer exactly this pause (of the turn, now `status`)."""
        # Two submissions can both pass validation within one workflow task; only the first counts.
        if status != TurnStatus.AWAITING_INPUT or self.submitted is not None:
            raise ApplicationError(f"Turn {turn_id} is {status.value}, not awaiting input", type=NOT_AWAITING_INPUT)
        calls = [call.call_id for call in self.calls]
        responses = [response.call_id for response in submission.tool_responses]
        _one_each(turn_id, "responses for call_ids", calls, responses, "response per pending call")
        requests = [request.approval_request_id for request in self.approvals]
        decisions = [decision.approval_request_id for decision in submission.approvals]
        _one_each(
            turn_id, "decisions for approval requests", requests, decisions, "decision per pending approval request"
        )
        if any(not isinstance(message, UserMessage) for message in submission.followup_messages):
            raise ApplicationError(
                "followup_messages must be user messages; tool results go in tool_responses",
                type=TOOL_RESPONSES_MISMATCH,
            )

    def detail_lines(self) -> list[str]:
        """What the pause waits for, as lines of the UI's current details."""
        lines: list[str] = []
        if self.calls:
            lines += ["", "**Waiting for client tool results:**"]
            lines += [f"- `{call.tool_name}` (call_id `{call.call_id}`)" for call in self.calls]
        if self.approvals:
            lines += ["", "**Waiting for approval:**"]
            lines += [
                f"- `{request.call.tool_name}` of `{request.server_label}` (`{request.approval_request_id}`)"
                for request in self.approvals
            ]
        return lines


def read_signal(raw: RawValue) -> ToolResponsesSubmission:
    """The submission a tool-results signal carries; ValueError saying why if it carries none."""
    try:
        return workflow.payload_converter().from_payload(raw.payload, ToolResponsesSubmission)
    except (ValueError, TypeError) as unreadable:  # not JSON, or not the submission's shape
        raise ValueError(f"its input is not {_SUBMISSION_SHAPE}: {' '.join(str(unreadable).split())[:300]}") from None


def client_results(calls: list[ToolCall], submission: ToolResponsesSubmission) -> list[ToolResponse]:
    """The submission's results in the order of the calls."""
    by_call = {response.call_id: response for response in submission.tool_responses}
    return [by_call[call.call_id] for call in calls]


def decide(
    approvals: list[ApprovalRequest], decisions: list[ApprovalDecision]
) -> tuple[list[ToolCall], list[ToolResponse], list[ApprovalRequest]]:
    """Split the approval requests by the decisions: the denied calls with the answers the model reads for
    them (they do not run), and the approved requests (they run once). Each denial's answer keeps its
    decision (who, when, why) in `metadata.decision`."""
    by_id = {decision.approval_request_id: decision for decision in decisions}
    denied = [request for request in approvals if not by_id[request.approval_request_id].approve]
    answers = []
    for request in denied:
        decision = by_id[request.approval_request_id]
        who = "the system" if decision.decided_by == SYSTEM_DECIDER else "the user"
        text = f"denied by {who}: {decision.reason}" if decision.reason else f"denied by {who}"
        metadata = {
            **steps.mcp_metadata(request.server_label, request.approval_request_id),
            "denied": True,
            "decision": decision.record(),
        }
        answers.append(steps.answer(request.call, text, metadata))
    approved = [request for request in approvals if by_id[request.approval_request_id].approve]
    return [request.call for request in denied], answers, approved


def approval_deadline(plan_servers: list[McpServer], approvals: list[ApprovalRequest]) -> timedelta | None:
    """How long the pause's approvals may wait undecided: the shortest timeout of their servers; None: forever."""
    timeouts = {server.label: server.approval.timeout for server in plan_servers}
    found = [timeouts.get(request.server_label) for request in approvals]
    return min((timeout for timeout in found if timeout is not None), default=None)


def timed_out(approvals: list[ApprovalRequest], now: datetime) -> ToolResponsesSubmission:
    """What ends a pause whose approvals reached their deadline: each denied by `system`, "approval timed out"."""
    denials = [
        ApprovalDecision(
            approval_request_id=request.approval_request_id,
            approve=False,
            reason=TIMED_OUT,
            decided_by=SYSTEM_DECIDER,
            decided_at=now,
        )
        for request in approvals
    ]
    return ToolResponsesSubmission(tool_responses=[], approvals=denials)


def _one_each(turn_id: str, awaited: str, expected: list[str], given: list[str], each: str) -> None:
    """Refuse `given` ids unless they are `expected`'s, each once, in any order."""
    if sorted(given) != sorted(expected):
        raise ApplicationError(
            f"Turn {turn_id} awaits {awaited} {expected}, got {given}: send exactly one {each}",
            type=TOOL_RESPONSES_MISMATCH,
        )
