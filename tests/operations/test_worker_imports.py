"""The worker imports no API code: import-linter's layers cover the packages (activities and what they use sit
below `api`), but not the entry-point module worker.py, which this reads."""

from __future__ import annotations

import ast
from pathlib import Path

WORKER = Path(__file__).resolve().parents[2] / "worker.py"


def test_the_worker_imports_no_api_module() -> None:
    tree = ast.parse(WORKER.read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert "activities.automation_delivery" in imported  # what is read is the worker's own imports
    assert not {name for name in imported if name == "api" or name.startswith("api.")}
