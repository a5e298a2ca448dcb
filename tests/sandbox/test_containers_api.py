"""The Containers API through the unmodified openai SDK: containers and their files round trip, what the
sandbox cannot give is refused by name, a link the code made is never followed, another tenant's container
is not found on any route, and the tenant's quota holds."""

from __future__ import annotations

import os

import httpx
import openai
import pytest

from code_sandbox.workspaces import workspace_path
from tests.support.stack import Stack

CONTAINER_ROUTES = {
    ("post", "/v1/containers"),
    ("get", "/v1/containers"),
    ("get", "/v1/containers/{container_id}"),
    ("delete", "/v1/containers/{container_id}"),
    ("post", "/v1/containers/{container_id}/files"),
    ("get", "/v1/containers/{container_id}/files"),
    ("get", "/v1/containers/{container_id}/files/{file_id}"),
    ("delete", "/v1/containers/{container_id}/files/{file_id}"),
    ("get", "/v1/containers/{container_id}/files/{file_id}/content"),
}


@pytest.fixture
def oai(stack: Stack) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0)


def test_a_container_and_its_files_round_trip(oai: openai.OpenAI, stack: Stack) -> None:
    source = oai.files.create(file=("data.csv", b"x,y\n1,2\n"), purpose="user_data")
    container = oai.containers.create(
        name="analysis", file_ids=[source.id], expires_after={"anchor": "last_active_at", "minutes": 30}
    )
    assert container.object == "container" and container.status == "running" and container.name == "analysis"
    assert container.expires_after is not None and container.expires_after.minutes == 30
    assert container.network_policy is not None and container.network_policy.type == "disabled"
    assert oai.containers.retrieve(container.id).id == container.id
    assert container.id in [listed.id for listed in oai.containers.list(name="analysis")]

    copied = [file for file in oai.containers.files.list(container.id)]
    assert [(file.path, file.bytes, file.source) for file in copied] == [("/workspace/data.csv", 8, "user")]
    assert oai.containers.files.content.retrieve(copied[0].id, container_id=container.id).content == b"x,y\n1,2\n"

    uploaded = oai.containers.files.create(container.id, file=("notes.txt", b"remember"))
    assert uploaded.object == "container.file" and uploaded.path == "/workspace/notes.txt"
    assert oai.containers.files.retrieve(uploaded.id, container_id=container.id).bytes == 8
    workspace = workspace_path(stack.settings.data_dir, container.id)
    assert (workspace / "notes.txt").read_bytes() == b"remember"

    oai.containers.files.delete(uploaded.id, container_id=container.id)
    assert not (workspace / "notes.txt").exists()
    with pytest.raises(openai.NotFoundError):
        oai.containers.files.retrieve(uploaded.id, container_id=container.id)

    oai.containers.delete(container.id)
    assert not workspace.exists()
    with pytest.raises(openai.NotFoundError):
        oai.containers.retrieve(container.id)


def test_a_link_the_code_made_is_not_followed(oai: openai.OpenAI, stack: Stack, http: httpx.Client) -> None:
    container = oai.containers.create(name="links")
    added = oai.containers.files.create(container.id, file=("out.txt", b"mine"))
    workspace = workspace_path(stack.settings.data_dir, container.id)
    secret = stack.settings.data_dir / "host-secret.txt"
    secret.write_text("host only")
    (workspace / "out.txt").unlink()
    os.symlink(secret, workspace / "out.txt")  # as code in the sandbox could
    refused = http.get(f"/v1/containers/{container.id}/files/{added.id}/content")
    assert refused.status_code == 404 and "host only" not in refused.text
    os.symlink(stack.settings.data_dir, workspace / "up")
    through = oai.containers.files.create(container.id, file=("up/host-secret.txt", b"overwrite?"))
    assert through.path == "/workspace/host-secret.txt"  # only the name is kept: no directory of the code's
    assert secret.read_text() == "host only"
    oai.containers.delete(container.id)
    assert secret.read_text() == "host only"


def test_what_the_sandbox_cannot_give_is_refused_by_name(oai: openai.OpenAI, http: httpx.Client) -> None:
    with pytest.raises(openai.BadRequestError) as network:
        oai.containers.create(name="n", network_policy={"type": "allowlist", "allowed_domains": ["example.com"]})
    assert "network_policy" in network.value.message and "no network" in network.value.message
    with pytest.raises(openai.BadRequestError) as memory:
        oai.containers.create(name="m", memory_limit="64g")
    assert "memory_limit" in memory.value.message
    unknown = http.post("/v1/containers", json={"name": "u", "gpu": True})
    assert unknown.status_code == 400 and "gpu" in unknown.text
    with pytest.raises(openai.NotFoundError):
        oai.containers.create(name="f", file_ids=["file-missing"])
    assert "f" not in [container.name for container in oai.containers.list()]


def test_another_tenants_container_is_not_found_on_every_route(stack: Stack) -> None:
    settings = stack.settings.model_copy(update={"api_keys": ("ct-owner-0123", "ct-other-4567")})
    with stack.other_api(settings) as url:
        owner = openai.OpenAI(base_url=f"{url}/v1", api_key="ct-owner-0123", max_retries=0)
        container = owner.containers.create(name="private")
        file = owner.containers.files.create(container.id, file=("secret.txt", b"0451"))
        requests = [
            ("get", f"/v1/containers/{container.id}", None),
            ("delete", f"/v1/containers/{container.id}", None),
            ("post", f"/v1/containers/{container.id}/files", {"file_id": "file-x"}),
            ("get", f"/v1/containers/{container.id}/files", None),
            ("get", f"/v1/containers/{container.id}/files/{file.id}", None),
            ("delete", f"/v1/containers/{container.id}/files/{file.id}", None),
            ("get", f"/v1/containers/{container.id}/files/{file.id}/content", None),
        ]
        with httpx.Client(base_url=url, headers={"Authorization": "Bearer ct-other-4567"}, timeout=60) as other:
            for method, path, body in requests:
                refused = other.request(method, path, json=body)
                assert refused.status_code == 404, (method, path, refused.text)
            assert other.get("/v1/containers").json()["data"] == []
        assert owner.containers.files.content.retrieve(file.id, container_id=container.id).content == b"0451"
        owner.containers.delete(container.id)


def test_a_tenant_holds_at_most_its_quota_of_containers(stack: Stack) -> None:
    settings = stack.settings.model_copy(update={"max_containers_per_tenant": 2, "api_keys": ("ct-quota-0123",)})
    with stack.other_api(settings) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="ct-quota-0123", max_retries=0)
        made = [client.containers.create(name=f"q{index}") for index in range(2)]
        with pytest.raises(openai.BadRequestError) as refused:
            client.containers.create(name="one too many")
        assert "DA_MAX_CONTAINERS_PER_TENANT" in refused.value.message
        client.containers.delete(made[0].id)
        client.containers.delete(client.containers.create(name="fits again").id)
        client.containers.delete(made[1].id)
