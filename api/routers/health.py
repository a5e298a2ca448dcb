"""Liveness: the store answers and Temporal answers."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException

from api.runtime import RuntimeDep
from api.schemas import HealthResponse

router = APIRouter(tags=["health"])


@router.get("/health", response_model=HealthResponse)
async def health(runtime: RuntimeDep) -> HealthResponse:
    try:
        await runtime.store.ping()
    except Exception as error:
        raise HTTPException(503, f"The store does not answer: {error}") from error
    try:
        await runtime.turns.check_connection()
    except Exception as error:
        raise HTTPException(503, f"Temporal does not answer: {error}") from error
    return HealthResponse(status="OK")
