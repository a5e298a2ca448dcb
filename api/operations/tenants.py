"""`DELETE /v1/operator/tenants/{tenant}`: erase everything of one tenant, for an operator.

The erasure is a `TenantErasure` workflow (workflows/retention.py): it stops the tenant's running and paused
turns, then deletes its rows kind by kind in bounded batches, and finishes whatever crashes on the way. The
call waits a little for it; a tenant with much data answers 202 while it goes on, and asking again reports
on the same erasure (or, once it ended, makes sure nothing was added since).

Only with DA_OPERATOR_KEY set, and only for `Authorization: Bearer <that key>`: an API key, which acts for
one tenant, never erases one.
"""

from __future__ import annotations

import asyncio
import hmac
from typing import Annotated, Any

from fastapi import APIRouter, Header, HTTPException, Path
from fastapi.responses import JSONResponse
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy

from api.services import ServicesDep
from workflows.retention import Erased, EraseRequest, TenantErasure, erasure_workflow_id

router = APIRouter(tags=["operator"])

WAIT_SECONDS = 20.0


def _require_operator(expected: str | None, authorization: str | None) -> None:
    if expected is None:
        raise HTTPException(404, "Operator routes are off: the server has no DA_OPERATOR_KEY.")
    scheme, _, token = (authorization or "").strip().partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), expected.encode()):
        raise HTTPException(
            401, "Operator routes need 'Authorization: Bearer <DA_OPERATOR_KEY>'.", {"WWW-Authenticate": "Bearer"}
        )


@router.delete("/operator/tenants/{tenant}")
async def erase_tenant(
    tenant: Annotated[str, Path(pattern=r"^[A-Za-z0-9_.-]{1,64}$")],
    services: ServicesDep,
    authorization: Annotated[str | None, Header()] = None,
) -> Any:
    """Delete every agent, session, turn, response, conversation, toolgroup and compaction of the tenant.
    Revoke its API keys first: what it creates meanwhile may survive this erasure (erase it again)."""
    _require_operator(services.settings.operator_key, authorization)
    handle = await services.turns.client.start_workflow(
        TenantErasure.run,
        EraseRequest(tenant=tenant, limit=services.settings.retention_batch),
        id=erasure_workflow_id(tenant),
        task_queue=services.settings.task_queue,
        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        static_summary=f"erase tenant {tenant}",
    )
    try:
        erased: Erased = await asyncio.wait_for(handle.result(), WAIT_SECONDS)
    except TimeoutError:
        return JSONResponse({"tenant": tenant, "status": "in_progress", "workflow_id": handle.id}, status_code=202)
    return {"tenant": tenant, "status": "completed", "workflow_id": handle.id, **erased.model_dump()}
