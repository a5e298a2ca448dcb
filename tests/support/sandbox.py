"""Temporal's workflow sandbox, as the test suite runs turns in it.

The worker runs turns outside the sandbox (worker.workflow_runner says why); the tests' in-process
stacks and the replays of recorded histories run them inside it, so a nondeterministic call in
workflow code (the clock, randomness, I/O) fails a test instead of a turn's replay in production.
"""

from __future__ import annotations

import pkgutil

from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

import workflows
from workflows.turn import TurnWorkflow


def sandboxed_runner() -> SandboxedWorkflowRunner:
    """The sandbox with the workflow's stateless helper modules (all of workflows/ but turn.py) and the
    domain passed through, as their imports in turn.py ask: only turn.py is executed anew per turn."""
    helpers = [
        f"{workflows.__name__}.{module.name}"
        for module in pkgutil.iter_modules(workflows.__path__)
        if f"{workflows.__name__}.{module.name}" != TurnWorkflow.__module__
    ]
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules("domain", *helpers)
    )
