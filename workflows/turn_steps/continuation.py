"""Continue-as-new: a long turn starts a fresh run with its state in the store, and a new run restores it."""

from __future__ import annotations

from datetime import timedelta
from typing import NoReturn

from temporalio import workflow

from workflows.turn_steps.state import STORE_RETRY, TurnState

with workflow.unsafe.imports_passed_through():
    from workflows.contracts import (
        LOAD_STEPS_ACTIVITY,
        Continuation,
        LoadStepsRequest,
        LoadStepsResult,
        TurnProgress,
    )


class Continuations(TurnState):
    async def _restore(self, continuation: Continuation) -> None:
        self._inferences = continuation.inferences
        self._last_time = continuation.last_time
        self._server_tools = continuation.server_tools
        self._listed_servers = continuation.listed_servers
        self._segment_server_calls = continuation.segment_server_calls
        result = await workflow.execute_activity(
            LOAD_STEPS_ACTIVITY,
            LoadStepsRequest(session_id=self._start.session_id, turn_id=self._start.turn_id),
            result_type=LoadStepsResult,
            summary="store · load steps",
            start_to_close_timeout=timedelta(seconds=30),
            retry_policy=STORE_RETRY,
        )
        self._steps = result.steps
        self._saved_steps = len(self._steps)
        self._describe()

    async def _continue_as_new(self) -> NoReturn:
        """Start a fresh run of this turn before its history grows large; state goes via the store."""
        await self._write(
            TurnProgress(
                turn_id=self._start.turn_id,
                session_id=self._start.session_id,
                pending=self._pending(),
                status=self._status,
            )
        )
        await workflow.wait_condition(workflow.all_handlers_finished)
        continuation = Continuation(
            inferences=self._inferences,
            last_time=self._last_time,
            server_tools=self._server_tools,
            listed_servers=self._listed_servers,
            segment_server_calls=self._segment_server_calls,
        )
        update: dict[str, object] = {"continuation": continuation}
        if self._plan != self._start.turn_plan():  # a resumed segment brought a new plan
            update["plan"] = self._plan
        if self._local_inference != self._start.local_inference:
            update["local_inference"] = self._local_inference
        workflow.continue_as_new(self._start.model_copy(update=update))
