"""Deleting an Agents API session as one durable operation: `AgentSessionDeletion` stops the session's running
and paused turns, then deletes the session with its turns, its input keys and its spend ledger in one
transaction. Its one activity does both and is retried until it succeeds, so an API process or worker that dies
half-way leaves nothing behind: Temporal runs the rest. Stopping comes first, so a retry still finds the turns
to stop by the session's rows."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel

DELETE_SESSION_ACTIVITY = "delete_agent_session"
SESSION_DELETION_PREFIX = "delete-agent-session-"

_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=30))


class SessionDeletionRequest(BaseModel):
    tenant: str
    session_id: str


def session_deletion_workflow_id(session_id: str) -> str:
    return SESSION_DELETION_PREFIX + session_id


@workflow.defn(name="AgentSessionDeletion")
class AgentSessionDeletion:
    @workflow.run
    async def run(self, request: SessionDeletionRequest) -> bool:
        """True if the session was there to delete (a repeat of a finished deletion finds nothing)."""
        deleted: bool = await workflow.execute_activity(
            DELETE_SESSION_ACTIVITY,
            request,
            result_type=bool,
            start_to_close_timeout=timedelta(minutes=10),  # a session of thousands of turns to stop
            heartbeat_timeout=timedelta(seconds=10),  # a dead worker is noticed by its missing heartbeats
            retry_policy=_RETRY,
        )
        return deleted
