"""Automations on the wire: the create and update bodies as the `openai` SDK 3.54 sends them, their checks, and
the `agent.automation` and `agent.automation.invocation` objects it parses."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field

from agent_sessions.agent_snapshot import resolve_agent
from agent_sessions.session_turns import input_messages
from api.openai.agents.mcp_tools import has_mcp_credentials
from api.openai.agents.session_requests import agent_choice, check_environment
from api.openai.agents.wire import AgentFields, EnvironmentParam, agent_body, check_metadata, parse, timestamp
from api.openai.errors import invalid, not_found
from api.services import Services
from store.agent_sessions.automations import AutomationRecord, InvocationRecord


class AutomationCreate(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: Literal["periodic", "once"]
    name: str = Field(min_length=1, max_length=256)
    target: dict[str, Any]
    metadata: dict[str, str] | None = None
    expression: str | None = None
    timezone: str | None = None
    run_at: int | None = None


class AutomationUpdate(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str | None = Field(default=None, min_length=1, max_length=256)
    target: dict[str, Any] | None = None
    metadata: dict[str, str] | None = None
    expression: str | None = None
    timezone: str | None = None
    run_at: int | None = None


class NewSessionTarget(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: Literal["new_session"]
    environment: EnvironmentParam | None = None
    input: list[dict[str, Any]]
    agent: AgentFields | None = None
    agent_id: str | None = None
    metadata: dict[str, str] | None = None
    vault_ids: list[str] | None = None


class ExistingSessionTarget(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: Literal["existing_session"]
    session_id: str
    instructions: str = Field(min_length=1)


def check_expression(expression: str | None) -> str:
    """A 5-field cron expression (minute hour day-of-month month day-of-week); Temporal checks the fields."""
    if not expression or len(expression.split()) != 5:
        raise invalid(
            "expression must be a 5-field cron expression (minute hour day-of-month month day-of-week), "
            f"e.g. '0 9 * * 1-5'; got {expression!r}.",
            "expression",
        )
    return " ".join(expression.split())


def check_timezone(timezone: str | None) -> str:
    if not timezone:
        raise invalid("timezone is required for a periodic automation, e.g. 'UTC' or 'Europe/Paris'.", "timezone")
    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        message = f"timezone {timezone!r} is not an IANA time zone name (e.g. 'Europe/Paris')."
        raise invalid(message, "timezone") from None
    return timezone


def check_run_at(run_at: int | None) -> int:
    if run_at is None:
        raise invalid("run_at is required for a one-time automation: a future Unix timestamp in seconds.", "run_at")
    if run_at <= time.time():
        raise invalid(f"run_at must be in the future; {run_at} has passed.", "run_at")
    return run_at


async def check_target(services: Services, tenant: str, raw: Any, kind: str | None = None) -> dict[str, Any]:
    """The target as stored and shown; `kind`: the type an update must keep."""
    if not isinstance(raw, dict) or raw.get("type") not in ("new_session", "existing_session"):
        raise invalid("target.type must be 'new_session' or 'existing_session'.", "target.type")
    if kind is not None and raw["type"] != kind:
        raise invalid(f"target.type cannot change: this automation's target is '{kind}'.", "target.type")
    if raw["type"] == "existing_session":
        existing: ExistingSessionTarget = parse(ExistingSessionTarget, raw, "target")
        if await services.store.agent_sessions.session(tenant, existing.session_id) is None:
            raise not_found("Session", existing.session_id)
        return existing.model_dump()
    target: NewSessionTarget = parse(NewSessionTarget, raw, "target")
    check_environment(target.environment)
    if target.vault_ids:
        raise invalid("target.vault_ids: vaults are not supported by this server; send none.", "target.vault_ids")
    if (target.agent is None) == (target.agent_id is None):
        raise invalid("target takes exactly one of `agent` (inline) and `agent_id`.", "target.agent")
    input_messages(target.input, "target.input")
    if target.agent is not None and has_mcp_credentials(target.agent.tools):
        raise invalid(
            "target.agent: an automation's inline agent cannot keep MCP credentials; save the agent "
            "(client.beta.agents.create) and give its agent_id.",
            "target.agent",
        )
    await resolve_agent(services, tenant, agent_choice(services, target.agent_id, target.agent))
    agent = None
    if target.agent is not None:  # shown as the Agent object shows an agent, defaults filled in
        agent = agent_body(target.agent)
        agent.pop("metadata", None)
    return {
        "type": "new_session",
        "agent": agent,
        "agent_id": target.agent_id,
        "environment": {"type": "none"},
        "input": [{"type": "message", "role": "user", **message} for message in target.input],
        "metadata": check_metadata(target.metadata, "target.metadata"),
        "vault_ids": [],
    }


def automation_object(record: AutomationRecord) -> dict[str, Any]:
    body = record.body
    shown: dict[str, Any] = {
        "id": record.automation_id,
        "object": "agent.automation",
        "type": record.kind,
        "created_at": timestamp(record.created_at),
        "created_by": body.get("created_by") or {"type": "developer"},
        "metadata": body.get("metadata") or {},
        "name": body["name"],
        "status": record.status,
        "pause_reason": record.pause_reason,
        "target": body["target"],
    }
    if record.kind == "periodic":
        shown |= {"expression": body["expression"], "timezone": body["timezone"]}
    else:
        shown["run_at"] = body["run_at"]
    return shown


def _ts(moment: datetime | None) -> int | None:
    return timestamp(moment) if moment is not None else None


def invocation_object(invocation: InvocationRecord, automation: AutomationRecord) -> dict[str, Any]:
    source: dict[str, Any] = {"type": "manual"}
    if invocation.source == "automation":
        then = invocation.snapshot or {}
        snapshot = AutomationRecord(
            automation.automation_id,
            automation.tenant_id,
            then.get("kind", automation.kind),
            then.get("body", automation.body),
            then.get("status", automation.status),
            None,
            automation.created_at,
            automation.updated_at,
        )
        source = {"type": "automation", "automation": automation_object(snapshot)}
    return {
        "id": invocation.invocation_id,
        "object": "agent.automation.invocation",
        "automation_id": invocation.automation_id,
        "created_at": timestamp(invocation.created_at),
        "status": invocation.status,
        "source": source,
        "scheduled_at": _ts(invocation.scheduled_at),
        "session_id": invocation.session_id,
        "skip_reason": invocation.skip_reason,
        "error": invocation.error,
    }
