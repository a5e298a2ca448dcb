"""Crash points for fault tests: the process kills itself where a real crash would hurt most.

Enabled only by the test-only variable `DA_TEST_FAULT` (deliberately not a setting: nothing in
production should ever turn it on). With `DA_TEST_FAULT=after_turn_row`, an API process dies by
SIGKILL right after it recorded a new turn and before it started the turn's workflow.
"""

from __future__ import annotations

import os
import signal

AFTER_TURN_ROW = "after_turn_row"


def crash_point(name: str) -> None:
    if os.environ.get("DA_TEST_FAULT") == name:
        os.kill(os.getpid(), signal.SIGKILL)
