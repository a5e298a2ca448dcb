"""The delivery of an automation's occurrence, as activities the worker runs for `AutomationRun`
(workflows/automation_run.py): record the invocation, then create or feed the session through the session
service (agent_sessions/), exactly as the session routes would: an automation delivers what a `sessions.create`
or an `input.message` would, with the same checks and the same turn start.

Idempotent by the invocation's run key: the new session's id and the turn's idempotency key derive from it.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from temporalio import activity

from activities.heartbeat import heartbeating
from agent_sessions.agent_snapshot import AgentChoice
from agent_sessions.automation_schedules import delete_schedule, pause_schedule
from agent_sessions.creation import NewSession, create_session
from agent_sessions.refusals import SessionRefused
from agent_sessions.session_turns import start_turn
from configuration.settings import Settings
from store.agent_sessions.automations import AutomationRecord, AutomationStore, InvocationRecord
from store.repository import Store
from tool_runtime.catalog import ToolCatalog
from turn_client.starter import TurnStarter
from workflows.automation_run import (
    DELIVER_AUTOMATION_ACTIVITY,
    FAIL_AUTOMATION_ACTIVITY,
    AutomationDelivered,
    AutomationDelivery,
    AutomationFailure,
)

log = logging.getLogger(__name__)

TARGET_SESSION_FAILED = "target_session_failed"


def delivery_session_id(invocation_id: str) -> str:
    """The id of the session a `new_session` delivery creates: the same in every attempt."""
    return "sess_" + hashlib.sha256(invocation_id.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class WorkerSessionServices:
    """What the session service needs, in the worker: it starts turns on the worker's own client."""

    settings: Settings
    store: Store
    turns: TurnStarter
    tools: ToolCatalog


def new_session(target: dict[str, Any]) -> NewSession:
    """A `new_session` target as the session service takes it. The target was checked, and its inline agent
    stored in the Agent object's form, when the automation was created or updated (api/openai/agents/
    automation_wire.py); the agent it names and the models and MCP servers it uses are checked again now."""
    agent = target.get("agent")
    inline = {key: value for key, value in agent.items() if value is not None} if agent is not None else None
    return NewSession(
        agent=AgentChoice(target.get("agent_id"), inline, agent),
        input=target.get("input"),
        metadata=target.get("metadata") or {},
    )


def _snapshot(automation: AutomationRecord) -> dict[str, Any]:
    """The automation as it is now: the scheduled invocation's `source.automation` (the view adds the wire fields)."""
    return {"status": automation.status, "body": automation.body, "kind": automation.kind}


class AutomationDeliveries:
    def __init__(self, services: WorkerSessionServices, automations: AutomationStore) -> None:
        self._services = services
        self._automations = automations

    @activity.defn(name=DELIVER_AUTOMATION_ACTIVITY)
    async def deliver_automation(self, delivery: AutomationDelivery) -> AutomationDelivered:
        automation = await self._automations.get(None, delivery.automation_id)
        if automation is None:  # deleted (its tenant erased, say): its Schedule goes too
            await delete_schedule(self._services.turns.client, delivery.automation_id)
            return AutomationDelivered(status="gone")
        now = datetime.now(UTC)
        scheduled = delivery.scheduled_at is not None
        claimed = await self._automations.claim(
            InvocationRecord(
                invocation_id=delivery.invocation_id,
                automation_id=automation.automation_id,
                tenant_id=automation.tenant_id,
                run_key=delivery.run_key,
                source="automation" if scheduled else "manual",
                snapshot=_snapshot(automation) if scheduled else None,
                scheduled_at=delivery.scheduled_at,
                status="queued",
                session_id=None,
                skip_reason=None,
                error=None,
                created_at=now,
            ),
            skip_if_pending=scheduled,
        )
        if claimed is None:
            return AutomationDelivered(status="gone")
        if scheduled and automation.kind == "once":  # its one occurrence has come, delivered or skipped
            await self._automations.set_status(automation.automation_id, "completed")
        if claimed.status != "queued":  # delivered (or skipped) by an earlier attempt
            return AutomationDelivered(status=claimed.status, session_id=claimed.session_id)
        try:
            async with heartbeating():
                session_id = await self._deliver(automation, claimed)
        except SessionRefused as refused:
            if refused.status_code >= 500:  # Temporal unavailable: retried
                raise
            return await self._refused(automation, claimed, refused)
        await self._automations.settle(claimed.invocation_id, "completed", session_id=session_id)
        return AutomationDelivered(status="completed", session_id=session_id)

    async def _deliver(self, automation: AutomationRecord, invocation: InvocationRecord) -> str:
        """Create or feed the target session; its id."""
        target = automation.body["target"]
        tenant = automation.tenant_id
        sessions = self._services.store.agent_sessions
        if target["type"] == "existing_session":
            session_id: str = target["session_id"]
            await start_turn(
                self._services, tenant, session_id, target["instructions"], idempotency_key=invocation.run_key
            )
            return session_id
        session_id = delivery_session_id(invocation.invocation_id)
        if await sessions.session(tenant, session_id) is not None:  # an earlier attempt created it
            await start_turn(self._services, tenant, session_id, target["input"], idempotency_key=invocation.run_key)
            return session_id
        new = new_session(target)
        await create_session(self._services, tenant, new, session_id=session_id, idempotency_key=invocation.run_key)
        return session_id

    async def _refused(
        self, automation: AutomationRecord, invocation: InvocationRecord, refused: SessionRefused
    ) -> AutomationDelivered:
        """The session service refused the delivery: a busy target session skips this occurrence; anything
        else fails it, and a target session that is gone pauses the automation."""
        target = automation.body["target"]
        session_id = target.get("session_id")
        if refused.status_code == 409:
            # The session is still at work on earlier input: this occurrence is not delivered.
            await self._automations.settle(
                invocation.invocation_id, "skipped", session_id=session_id, skip_reason="pending_delivery"
            )
            return AutomationDelivered(status="skipped", session_id=session_id)
        error = {"code": refused.code or "invalid_request_error", "message": refused.message}
        await self._automations.settle(invocation.invocation_id, "failed", session_id=session_id, error=error)
        if refused.status_code == 404 and target["type"] == "existing_session":
            await self._automations.set_status(automation.automation_id, "paused", TARGET_SESSION_FAILED)
            await pause_schedule(self._services.turns.client, automation.automation_id, TARGET_SESSION_FAILED)
        log.warning("automation %s: delivery failed: %s", automation.automation_id, error["message"])
        return AutomationDelivered(status="failed", session_id=session_id)

    @activity.defn(name=FAIL_AUTOMATION_ACTIVITY)
    async def fail_automation_invocation(self, failure: AutomationFailure) -> None:
        """A delivery retried until its deadline: its invocation has failed."""
        error = {"code": "delivery_failed", "message": failure.message[:1000]}
        await self._automations.settle(failure.invocation_id, "failed", error=error)
