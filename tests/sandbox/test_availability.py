"""No sandbox, no execution: a host without one says what to install, and container ids stay names."""

from __future__ import annotations

from pathlib import Path

import pytest

from code_sandbox.availability import DEFAULT_PYTHON_ENV, SandboxUnavailable, configured_sandbox, find_sandbox
from code_sandbox.workspaces import InvalidContainerId, create_workspace, delete_workspace, workspace_path
from configuration.loading import load_settings


def test_without_bwrap_the_error_names_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(SandboxUnavailable) as refused:
        find_sandbox(DEFAULT_PYTHON_ENV, search_path=str(tmp_path))
    assert "no code is run" in str(refused.value) and "apt-get install bubblewrap" in str(refused.value)


def test_a_bwrap_that_cannot_make_namespaces_is_refused(tmp_path: Path) -> None:
    """A bwrap refused its namespaces (as where unprivileged user namespaces are off) fails the check."""
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(SandboxUnavailable) as refused:
        find_sandbox(DEFAULT_PYTHON_ENV, search_path=str(tmp_path))
    assert "No permissions to create new namespace" in str(refused.value) and "user namespaces" in str(refused.value)


def test_without_the_python_environment_the_error_names_the_make_target(tmp_path: Path) -> None:
    settings = load_settings({"DA_SANDBOX_PYTHON_ENV": str(tmp_path / "missing-env")})
    with pytest.raises(SandboxUnavailable) as refused:
        configured_sandbox(settings)
    assert "missing-env is missing" in str(refused.value) and "make sandbox-env" in str(refused.value)


@pytest.mark.parametrize("container_id", ["../etc", "a/b", "", ".hidden", "x" * 129, "cntr_1\n"])
def test_container_ids_cannot_name_a_path(tmp_path: Path, container_id: str) -> None:
    with pytest.raises(InvalidContainerId):
        workspace_path(tmp_path, container_id)


def test_a_workspace_is_created_and_deleted_under_the_data_directory(tmp_path: Path) -> None:
    workspace = create_workspace(tmp_path, "cntr_abc")
    (workspace / "file.txt").write_text("x")
    assert workspace == tmp_path / "containers" / "cntr_abc" / "workspace"
    delete_workspace(tmp_path, "cntr_abc")
    assert not (tmp_path / "containers" / "cntr_abc").exists()
