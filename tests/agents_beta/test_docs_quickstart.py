"""The Agents API page's quickstart runs as written against the real stack (only the address differs)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.support.stack import Stack

PAGE = Path(__file__).parents[2] / "docs" / "agents-api.md"


def test_the_quickstart_runs_as_written(stack: Stack) -> None:
    first = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.DOTALL)[0]
    ran = subprocess.run(
        [sys.executable, "-c", first.replace("http://127.0.0.1:8321", stack.base_url)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    lines = ran.stdout.splitlines()
    assert lines[0] == "Tool get_weather returned: sunny in Paris."
    assert lines[1] == "You said: hello"
    assert lines[2] == "['message', 'function_call', 'function_call_output', 'message', 'message', 'message']"
