"""The chaos script's short run, in the suite: turns keep completing while the process running them is
SIGKILLed — a separate worker, or the API that runs its turns (serve.py's default)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.processes

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("options", "kills"), [([], "worker_kills"), (["--worker-in-api"], "api_kills")], ids=["worker", "api"]
)
def test_no_turn_is_lost_or_doubled_while_the_process_running_them_keeps_dying(options: list[str], kills: str) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "bench.chaos", "--quick", *options],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
    assert lines, f"chaos.py printed no result (exit {run.returncode}):\n{run.stderr[-3000:]}"
    result = json.loads(lines[-1])
    # What a failure needs to be understood: each lost or failed turn with its notes, the store's checks, timings.
    why = {key: result.get(key) for key in ("problems", "checks", "turn_ms", "recoveries", kills, "elapsed_seconds")}
    assert result[kills] >= 1, why
    assert result["started"] >= 10 and result["completed"] == result["started"], why
    assert result["lost"] == 0 and result["duplicated_tool_requests"] == 0, why
    assert run.returncode == 0, run.stderr[-3000:]
