"""The chaos script's short run, in the suite: turns keep completing while the worker is SIGKILLed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.processes

ROOT = Path(__file__).resolve().parent.parent


def test_no_turn_is_lost_or_doubled_while_the_worker_keeps_dying() -> None:
    run = subprocess.run(
        [sys.executable, "bench/chaos.py", "--quick"], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
    assert lines, f"chaos.py printed no result (exit {run.returncode}):\n{run.stderr[-3000:]}"
    result = json.loads(lines[-1])
    assert result["worker_kills"] >= 1, result
    assert result["started"] >= 10 and result["completed"] == result["started"], result
    assert result["lost"] == 0 and result["duplicated_tool_requests"] == 0, result
    assert run.returncode == 0, run.stderr[-3000:]
