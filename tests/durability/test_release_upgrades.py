"""`make run` (serve.py) of this code on the data directory of an earlier release: the release before the
store had migrations (33a2132) and the last release (fb3f566), each left with a completed turn and a
turn paused on a client tool, its workflow waiting in the Temporal dev server's database.

The stack comes up at the first try (the store is migrated, the namespace given the search attributes
added since), the old rows read back, and the paused turn resumes and completes. The data directories
were written by those releases' own code: tests/support/make_release_data.py says how.
"""

from __future__ import annotations

import json
import sqlite3
import tarfile
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest

from store.upgrade import head_revision
from tests.operations.test_serve import Service

pytestmark = pytest.mark.processes

RELEASES = Path(__file__).resolve().parent / "releases"


def unpack(release: str, data_dir: Path) -> dict[str, Any]:
    """The release's data directory in `data_dir`; its manifest (what it holds)."""
    with tarfile.open(RELEASES / f"{release}.tar.xz") as archive:
        archive.extractall(data_dir, filter="data")
    return json.loads((data_dir / "manifest.json").read_text())


@pytest.mark.parametrize(
    ("release", "added_attributes"),
    # Each release's namespace lacks the search attributes added since it (workflows/search_attributes.py).
    [("33a2132", "TenantId, ResponseId, ConversationId, AutomationId"), ("fb3f566", "AutomationId")],
    ids=["before store migrations (33a2132)", "the last release (fb3f566)"],
)
def test_an_earlier_releases_data_directory_comes_up_and_its_paused_turn_completes(
    tmp_path: Path, release: str, added_attributes: str
) -> None:
    manifest = unpack(release, tmp_path)
    agent_id, session_id = manifest["agent_id"], manifest["session_id"]
    completed, paused = manifest["completed_turn"], manifest["paused_turn"]
    service = Service(tmp_path)
    service.start()
    try:
        with httpx.Client(base_url=service.url, timeout=60) as http:
            agent = http.get(f"/v1/agents/{agent_id}")
            session = http.get(f"/v1/agents/{agent_id}/session/{session_id}")
            turns = f"/v1/agents/{agent_id}/session/{session_id}/turn"
            answer = {"call_id": paused["call_id"], "tool_name": paused["tool_name"], "content": "sunny"}
            resumed = http.post(f"{turns}/{paused['turn_id']}/resume", json={"tool_responses": [answer]})
            after = http.get(f"/v1/agents/{agent_id}/session/{session_id}").json()
        log = service.log.read_text(errors="replace")
    finally:
        assert service.interrupt() == 0

    # Up at the first try: no child exited, nothing was restarted.
    assert "exited with code" not in log and "restarting" not in log, service.tail()
    assert log.count("API started (pid") == 1, service.tail()
    assert f"added the search attributes {added_attributes} to the Temporal namespace" in log
    with closing(sqlite3.connect(tmp_path / "store.db")) as store:
        assert store.execute("SELECT version_num FROM alembic_version").fetchall() == [(head_revision(),)]

    # The old rows read back.
    assert agent.status_code == 200, agent.text
    assert agent.json()["agent_config"]["model"] == "offline/echo"
    assert [tool["name"] for tool in agent.json()["agent_config"]["client_tools"]] == ["get_weather"]
    assert session.status_code == 200, session.text
    before = session.json()["turns"]
    assert [turn["turn_id"] for turn in before] == [completed["turn_id"], paused["turn_id"]]
    assert before[0]["status"] == "completed" and before[0]["output_message"]["content"] == completed["output"]
    assert before[1]["status"] == "awaiting_input"

    # The turn paused under the earlier release resumes in its workflow and completes.
    assert resumed.status_code == 200, resumed.text
    turn = resumed.json()
    assert turn["status"] == "completed", turn
    assert turn["output_message"]["content"] == "Tool get_weather returned: sunny."
    assert [step["step_type"] for step in turn["steps"]] == ["inference", "tool_execution", "inference"]
    assert [t["status"] for t in after["turns"]] == ["completed", "completed"]


def test_each_fixture_is_small_and_holds_a_waiting_workflow(tmp_path: Path) -> None:
    for release in ("33a2132", "fb3f566"):
        assert (RELEASES / f"{release}.tar.xz").stat().st_size < 3_000_000
        manifest = unpack(release, tmp_path / release)
        with closing(sqlite3.connect(tmp_path / release / "temporal.db")) as temporal:
            running = temporal.execute("SELECT workflow_id FROM executions_visibility WHERE status = 1").fetchall()
        assert (f"turn-{manifest['paused_turn']['turn_id']}",) in running
