"""Crash points for fault tests: the process kills itself where a real crash would hurt most.

Enabled only by the test-only variable `DA_TEST_FAULT` (deliberately not a setting: nothing in
production should ever turn it on). With `DA_TEST_FAULT=after_turn_row`, an API process dies by
SIGKILL right after it recorded a new turn and before it started the turn's workflow; with
`after_turn_end`, a worker dies right after its inference activity wrote the turn's end and before
it reported its result; with `after_compaction`, a worker dies right after a turn's compaction step wrote
its summary and before it reported so; with `after_erase_batch`, a worker dies right after a tenant
erasure deleted a batch; with `after_attachment_row`, an API process dies right after it attached files to a
vector store (their rows `in_progress`) and before it started their ingestion; with `during_search`, a worker
dies after a knowledge tool's search found its results and before the activity reported them; with
`after_session_row`, an API process dies right after it recorded a new Agents API session and before anything
else; with `after_session_turns_stopped`, a worker dies after a session deletion stopped the session's turns
and before it deleted the session's rows.
"""

from __future__ import annotations

import os
import signal

AFTER_TURN_ROW = "after_turn_row"
AFTER_TURN_END = "after_turn_end"
AFTER_COMPACTION = "after_compaction"
AFTER_ERASE_BATCH = "after_erase_batch"
AFTER_ATTACHMENT_ROW = "after_attachment_row"
DURING_SEARCH = "during_search"
AFTER_SESSION_ROW = "after_session_row"
AFTER_SESSION_TURNS_STOPPED = "after_session_turns_stopped"


def crash_point(name: str) -> None:
    if os.environ.get("DA_TEST_FAULT") == name:
        os.kill(os.getpid(), signal.SIGKILL)
