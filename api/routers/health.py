"""Liveness: the store answers and Temporal answers."""

from __future__ import annotations

import logging

from fastapi import APIRouter, HTTPException

from api.runtime import RuntimeDep
from api.schemas import HealthResponse

router = APIRouter(tags=["health"])
log = logging.getLogger(__name__)


@router.get("/health", response_model=HealthResponse)
async def health(runtime: RuntimeDep) -> HealthResponse:
    try:
        await runtime.store.ping()
    except Exception as error:
        log.warning("health: the store does not answer: %r", error)
        raise HTTPException(503, "The store does not answer") from error
    try:
        await runtime.turns.check_connection()
    except Exception as error:
        log.warning("health: Temporal does not answer: %r", error)
        raise HTTPException(503, "Temporal does not answer") from error
    return HealthResponse(status="OK")
