"""The activity of `AgentSessionDeletion` (workflows/session_deletion.py): stop the session's unfinished turns,
then delete its rows in one transaction. Each step is idempotent, so a retry after a crash finishes the job."""

from __future__ import annotations

from temporalio import activity
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from activities.heartbeat import heartbeating
from hosting.fault_points import AFTER_SESSION_TURNS_STOPPED, crash_point
from store.repository import Store
from workflows.contracts import turn_workflow_id
from workflows.session_deletion import DELETE_SESSION_ACTIVITY, SessionDeletionRequest


class SessionDeletionActivities:
    def __init__(self, store: Store, client: Client) -> None:
        self._store = store
        self._client = client

    @activity.defn(name=DELETE_SESSION_ACTIVITY)
    async def delete_agent_session(self, request: SessionDeletionRequest) -> bool:
        sessions = self._store.agent_sessions
        if await sessions.session(request.tenant, request.session_id) is None:
            return False
        async with heartbeating():
            for turn in await sessions.session_turns(request.session_id):
                status = await self._store.turns.turn_status(turn.turn_id)
                if status is not None and not status.is_final:
                    await self._terminate(turn.turn_id, f"Its session {request.session_id} was deleted.")
            crash_point(AFTER_SESSION_TURNS_STOPPED)
            return await sessions.delete_session(request.tenant, request.session_id)

    async def _terminate(self, turn_id: str, reason: str) -> None:
        try:
            await self._client.get_workflow_handle(turn_workflow_id(turn_id)).terminate(reason=reason)
        except RPCError as error:
            if error.status != RPCStatusCode.NOT_FOUND:  # never started, or gone from Temporal's retention
                raise
