"""Temporal's workflow sandbox, as the test suite runs turns in it.

The worker runs turns outside the sandbox (worker.workflow_runner says why); the tests' in-process
stacks and the replays of recorded histories run them inside it, so a nondeterministic call in
workflow code (the clock, randomness, I/O) fails a test instead of a turn's replay in production.
"""

from __future__ import annotations

import pkgutil

from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

import workflows
import workflows.turn_steps
from workflows.turn import TurnWorkflow

WORKFLOW_CODE = {TurnWorkflow.__module__, workflows.turn_steps.__name__}
"""The turn workflow's own code: turn.py and its step kinds, executed anew per turn inside the sandbox."""


def sandboxed_runner() -> SandboxedWorkflowRunner:
    """The sandbox with the workflow's stateless helper modules (all of workflows/ but its own code) and the
    domain passed through, as their imports in turn.py ask: only the workflow's code is executed anew per turn."""
    helpers = [
        f"{workflows.__name__}.{module.name}"
        for module in pkgutil.iter_modules(workflows.__path__)
        if f"{workflows.__name__}.{module.name}" not in WORKFLOW_CODE
    ]
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules("domain", *helpers)
    )
