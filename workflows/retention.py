"""Retention as workflows: `RetentionSweep`, run by a Temporal Schedule, deletes what outlived its kind's
time-to-live; `TenantErasure` deletes everything of one tenant. Both delete in bounded batches, one
activity (one store transaction) each (store/retention.py), so a crash costs at most a batch's retry.

A sweep takes its TTLs from the worker that runs it (the activity `retention_policy` reads that worker's
settings), not from the Schedule: the Schedule exists whatever the settings, so no process started with
other settings can turn retention on or off for the others (workflows/retention_schedule.py).

Every sweep also deletes the vector stores, files and containers whose own `expires_after` has passed (the
kinds `EXPIRED_VECTOR_STORES`, `EXPIRED_FILES` and `EXPIRED_CONTAINERS`, whose cutoff is the sweep's start),
whether or not a TTL names them.

A sweep stops a kind after `max_batches` batches; the rest waits for the next period, so one run stays short
whatever the backlog. An erasure runs until the tenant has nothing left: started again after a crash, or
asked for again, it goes on where the store stands.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel, Field

POLICY_ACTIVITY = "retention_policy"
PRUNE_ACTIVITY = "prune_expired"
ERASE_ACTIVITY = "erase_tenant_batch"
STOP_TURNS_ACTIVITY = "stop_tenant_turns"
SWEEP_WORKFLOW_ID = "retention-sweep"
EXPIRED_VECTOR_STORES = "expired_vector_stores"
"""Not a DA_RETENTION kind: vector stores past their own `expires_after`, swept whatever the TTLs."""
EXPIRED_FILES = "expired_files"
"""Not a DA_RETENTION kind either: files past their own `expires_after`."""
EXPIRED_CONTAINERS = "expired_containers"
"""Not a DA_RETENTION kind either: containers idle past their `expires_after`, with their workspaces."""
_VECTOR_STORE_EXPIRY_PATCH = "vector-store-expiry"
_CONTAINER_EXPIRY_PATCH = "container-expiry"
_WORKER_POLICY_PATCH = "policy-from-worker"
SCHEDULE_ID = "retention"
ERASURE_PREFIX = "erase-tenant-"

_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=30))


class RetentionPolicy(BaseModel):
    ttls: dict[str, timedelta] = Field(default_factory=dict)
    """Kind (store/retention.py KINDS) → how long its rows are kept. What a Schedule passes is no longer
    read (sweeps ask their worker); a sweep started before that reads it."""
    batch: int = 500
    max_batches: int = 100


class PruneRequest(BaseModel):
    kind: str
    cutoff: datetime
    limit: int


class PruneResult(BaseModel):
    deleted: int


class EraseRequest(BaseModel):
    tenant: str
    limit: int = 500


class EraseResult(BaseModel):
    kind: str | None
    """The kind a batch was deleted of; None: the tenant has nothing left."""
    deleted: int


class Erased(BaseModel):
    deleted: dict[str, int] = Field(default_factory=dict)
    """Kind → rows deleted."""
    stopped_turns: int = 0


def erasure_workflow_id(tenant: str) -> str:
    return ERASURE_PREFIX + tenant


async def _call(name: str, request: BaseModel, result_type: type) -> object:
    return await workflow.execute_activity(
        name,
        request,
        result_type=result_type,
        start_to_close_timeout=timedelta(minutes=10),
        # A batch may take a while on a big store; a dead worker is noticed by its missing heartbeats.
        heartbeat_timeout=timedelta(seconds=10),
        retry_policy=_RETRY,
    )


@workflow.defn(name="RetentionSweep")
class RetentionSweep:
    @workflow.run
    async def run(self, policy: RetentionPolicy) -> dict[str, int]:
        now = workflow.now()
        pruned: dict[str, int] = {}
        from_worker = workflow.patched(_WORKER_POLICY_PATCH)
        if from_worker:
            policy = await workflow.execute_activity(
                POLICY_ACTIVITY,
                result_type=RetentionPolicy,
                start_to_close_timeout=timedelta(seconds=30),
                retry_policy=_RETRY,
            )
        cutoffs = {kind: now - ttl for kind, ttl in sorted(policy.ttls.items())}
        if workflow.patched(_VECTOR_STORE_EXPIRY_PATCH):
            cutoffs[EXPIRED_VECTOR_STORES] = now
        if from_worker:
            cutoffs[EXPIRED_FILES] = now
        if workflow.patched(_CONTAINER_EXPIRY_PATCH):
            cutoffs[EXPIRED_CONTAINERS] = now
        for kind, cutoff in cutoffs.items():
            pruned[kind] = 0
            for _ in range(policy.max_batches):
                request = PruneRequest(kind=kind, cutoff=cutoff, limit=policy.batch)
                result = await _call(PRUNE_ACTIVITY, request, PruneResult)
                assert isinstance(result, PruneResult)
                pruned[kind] += result.deleted
                if result.deleted < policy.batch:
                    break
        return pruned


@workflow.defn(name="TenantErasure")
class TenantErasure:
    """Everything of one tenant: its running and paused turns stopped first, then every kind's rows."""

    @workflow.run
    async def run(self, request: EraseRequest) -> Erased:
        erased = Erased()
        while True:
            stopped = await _call(STOP_TURNS_ACTIVITY, request, PruneResult)
            assert isinstance(stopped, PruneResult)
            erased.stopped_turns += stopped.deleted
            if stopped.deleted < request.limit:
                break
        while True:  # one batch of the first registered kind the tenant still has rows of, until none
            result = await _call(ERASE_ACTIVITY, request, EraseResult)
            assert isinstance(result, EraseResult)
            if result.kind is None:
                return erased
            erased.deleted[result.kind] = erased.deleted.get(result.kind, 0) + result.deleted
            if workflow.info().is_continue_as_new_suggested():  # a tenant of millions of rows
                workflow.continue_as_new(request)
