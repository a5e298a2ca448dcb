"""`/v1/agents/automations` of the Agents API (beta): automations on Temporal Schedules, their pause and
resume, manual invocations and the invocation log (agent_sessions/automation_schedules.py says how they run)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import Body, Query
from temporalio.service import RPCError, RPCStatusCode

from agent_sessions.automation_schedules import (
    create_schedule,
    delete_schedule,
    pause_schedule,
    replace_schedule,
    start_manual_run,
)
from agent_sessions.session_turns import new_id
from api.guards.tenancy import TenantDep
from api.openai.agents.automation_wire import (
    AutomationCreate,
    AutomationUpdate,
    automation_object,
    check_expression,
    check_run_at,
    check_target,
    check_timezone,
    invocation_object,
)
from api.openai.agents.routing import beta_router
from api.openai.agents.wire import check_metadata, parse
from api.openai.errors import OpenAIError, invalid, not_found
from api.openai.pages import list_page
from api.services import Services, ServicesDep
from store.agent_sessions.automations import AutomationRecord, AutomationStore, InvocationRecord
from store.tenancy.quotas import QuotaReached
from workflows.automation_run import manual_run_key

router = beta_router(tags=["automations (beta)"])

Order = Literal["asc", "desc"]


def _store(services: Services) -> AutomationStore:
    return services.store.automations


def _unknown_cursor(after: str) -> OpenAIError:
    message = f"No object with id '{after}' to list after; `after` takes the id of a listed one."
    return OpenAIError(404, message, "after")


async def _found(services: Services, tenant: str, automation_id: str) -> AutomationRecord:
    found = await _store(services).get(tenant, automation_id)
    if found is None:
        raise not_found("Automation", automation_id)
    return found


def _with_status(status: str) -> Callable[[AutomationRecord], AutomationRecord]:
    """The caller's pause or resume: a pause reason the service gave (target_session_failed) goes."""
    return lambda record: replace(record, status=status, pause_reason=None)


async def _sync_schedule(services: Services, record: AutomationRecord) -> None:
    """Make the Schedule match the stored automation; a refused spec (a cron Temporal does not accept) is a 400."""
    settings = services.settings
    try:
        await replace_schedule(services.turns.client, record, settings.task_queue, settings.automation_catchup_window)
    except RPCError as error:
        if error.status == RPCStatusCode.INVALID_ARGUMENT:
            raise invalid(f"Temporal refused the schedule: {error.message}", "expression") from error
        raise


@router.post("/agents/automations")
async def create_automation(
    raw: Annotated[dict[str, Any], Body(description="automations.create parameters")],
    services: ServicesDep,
    tenant: TenantDep,
) -> Any:
    """Saved active; the first delivery is at the first occurrence (or by a manual invocation)."""
    body: AutomationCreate = parse(AutomationCreate, raw, "automation")
    stored: dict[str, Any] = {
        "name": body.name,
        "metadata": check_metadata(body.metadata),
        "target": await check_target(services, tenant, body.target),
        "created_by": {"type": "developer"},
    }
    if body.type == "periodic":
        stored |= {"expression": check_expression(body.expression), "timezone": check_timezone(body.timezone)}
    else:
        stored["run_at"] = check_run_at(body.run_at)
    now = datetime.now(UTC)
    record = AutomationRecord(new_id("auto"), tenant, body.type, stored, "active", None, now, now)
    automations = _store(services)
    try:
        await automations.add(record, services.settings.max_automations_per_tenant)
    except QuotaReached as quota:
        raise OpenAIError(409, str(quota), code="limit_reached") from None
    settings = services.settings
    try:
        await create_schedule(services.turns.client, record, settings.task_queue, settings.automation_catchup_window)
    except RPCError as error:
        await automations.delete(tenant, record.automation_id)
        if error.status == RPCStatusCode.INVALID_ARGUMENT:
            raise invalid(f"Temporal refused the schedule: {error.message}", "expression") from error
        raise OpenAIError(503, "Could not create the automation's schedule (Temporal unavailable); retry.") from error
    return automation_object(record)


@router.get("/agents/automations")
async def list_automations(
    services: ServicesDep,
    tenant: TenantDep,
    after: str | None = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    order: Order = "desc",
    session_id: str | None = None,
) -> Any:
    try:
        found, more = await _store(services).page(tenant, after, limit, order, session_id)
    except LookupError:
        raise _unknown_cursor(after or "") from None
    return list_page([automation_object(record) for record in found], more)


@router.get("/agents/automations/{automation_id}")
async def retrieve_automation(automation_id: str, services: ServicesDep, tenant: TenantDep) -> Any:
    return automation_object(await _found(services, tenant, automation_id))


@router.post("/agents/automations/{automation_id}")
async def update_automation(
    automation_id: str,
    raw: Annotated[dict[str, Any], Body(description="automations.update parameters")],
    services: ServicesDep,
    tenant: TenantDep,
) -> Any:
    """Given fields replace the stored ones; the Schedule follows from its next occurrence."""
    record = await _found(services, tenant, automation_id)
    body: AutomationUpdate = parse(AutomationUpdate, raw, "automation update")
    changes: dict[str, Any] = {}
    if body.name is not None:
        changes["name"] = body.name
    if "metadata" in raw:
        changes["metadata"] = check_metadata(body.metadata)
    if body.target is not None:
        changes["target"] = await check_target(services, tenant, body.target, record.body["target"]["type"])
    periodic_fields = [name for name in ("expression", "timezone") if raw.get(name) is not None]
    if record.kind == "once" and periodic_fields:
        raise invalid(f"{periodic_fields[0]} is only accepted for periodic automations.", periodic_fields[0])
    if record.kind == "periodic" and body.run_at is not None:
        raise invalid("run_at is only accepted for one-time automations.", "run_at")
    if body.expression is not None:
        changes["expression"] = check_expression(body.expression)
    if body.timezone is not None:
        changes["timezone"] = check_timezone(body.timezone)
    if body.run_at is not None:
        if record.status == "completed":
            raise invalid("run_at cannot change: this one-time automation has run.", "run_at")
        changes["run_at"] = check_run_at(body.run_at)
    updated = await _store(services).change(tenant, automation_id, lambda r: replace(r, body=r.body | changes))
    if updated is None:
        raise not_found("Automation", automation_id)
    if updated.status != "completed":
        await _sync_schedule(services, updated)
    return automation_object(updated)


@router.delete("/agents/automations/{automation_id}")
async def delete_automation(automation_id: str, services: ServicesDep, tenant: TenantDep) -> Any:
    """Delete the automation, its Schedule and its invocation log; sessions it created stay."""
    await _found(services, tenant, automation_id)
    await delete_schedule(services.turns.client, automation_id)
    await _store(services).delete(tenant, automation_id)
    return {"id": automation_id, "object": "agent.automation.deleted", "deleted": True}


@router.post("/agents/automations/{automation_id}/pause")
async def pause_automation(automation_id: str, services: ServicesDep, tenant: TenantDep) -> Any:
    """Stop scheduled deliveries (manual invocations still deliver); the caller's pause has no pause_reason."""
    record = await _found(services, tenant, automation_id)
    if record.status == "completed":
        raise invalid(f"Automation {automation_id} has completed; there is nothing to pause.")
    paused = await _store(services).change(tenant, automation_id, _with_status("paused"))
    await pause_schedule(services.turns.client, automation_id)
    return automation_object(paused or record)


@router.post("/agents/automations/{automation_id}/resume")
async def resume_automation(automation_id: str, services: ServicesDep, tenant: TenantDep) -> Any:
    """Scheduled deliveries again, from the next occurrence; a one-time automation needs a future run_at."""
    record = await _found(services, tenant, automation_id)
    if record.status == "completed":
        raise invalid(f"Automation {automation_id} has completed; create a new one to run again.")
    if record.kind == "once" and record.body["run_at"] <= datetime.now(UTC).timestamp():
        raise invalid("This one-time automation's run_at has passed: update run_at to a future time first.", "run_at")
    resumed = await _store(services).change(tenant, automation_id, _with_status("active"))
    await _sync_schedule(services, resumed or record)
    return automation_object(resumed or record)


@router.post("/agents/automations/{automation_id}/invocations")
async def invoke_automation(automation_id: str, services: ServicesDep, tenant: TenantDep) -> Any:
    """Queue a manual delivery now, whatever the automation's status; it shows as `queued` until delivered."""
    record = await _found(services, tenant, automation_id)
    invocation_id = new_id("ainv")
    invocation = InvocationRecord(
        invocation_id=invocation_id,
        automation_id=automation_id,
        tenant_id=tenant,
        run_key=manual_run_key(invocation_id),
        source="manual",
        snapshot=None,
        scheduled_at=None,
        status="queued",
        session_id=None,
        skip_reason=None,
        error=None,
        created_at=datetime.now(UTC),
    )
    automations = _store(services)
    claimed = await automations.claim(invocation, skip_if_pending=False)
    if claimed is None:
        raise not_found("Automation", automation_id)
    try:
        await start_manual_run(services.turns.client, automation_id, invocation_id, services.settings.task_queue)
    except RPCError as error:
        await automations.settle(invocation_id, "failed", error={"code": "server_error", "message": error.message})
        raise OpenAIError(503, "Could not start the invocation (Temporal unavailable); retry.") from error
    return invocation_object(claimed, record)


@router.get("/agents/automations/{automation_id}/invocations")
async def list_invocations(
    automation_id: str,
    services: ServicesDep,
    tenant: TenantDep,
    after: str | None = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    order: Order = "desc",
) -> Any:
    record = await _found(services, tenant, automation_id)
    try:
        found, more = await _store(services).invocations(tenant, automation_id, after, limit, order)
    except LookupError:
        raise _unknown_cursor(after or "") from None
    return list_page([invocation_object(invocation, record) for invocation in found], more)


@router.get("/agents/automations/{automation_id}/invocations/{invocation_id}")
async def retrieve_invocation(automation_id: str, invocation_id: str, services: ServicesDep, tenant: TenantDep) -> Any:
    record = await _found(services, tenant, automation_id)
    invocation = await _store(services).invocation(tenant, automation_id, invocation_id)
    if invocation is None:
        raise not_found("Invocation", invocation_id)
    return invocation_object(invocation, record)
