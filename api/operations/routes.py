"""The operators' routes: `router` under the API's prefix (health, tenant erasure), `root_router` at the root
(readiness and Prometheus metrics, where probes and scrapers look for them)."""

from __future__ import annotations

from fastapi import APIRouter

from api.operations import health, metrics, tenants

router = APIRouter()
router.include_router(health.router)
router.include_router(tenants.router)

root_router = APIRouter()
root_router.include_router(health.readiness_router)
root_router.include_router(metrics.router)
