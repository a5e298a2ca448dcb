"""The Files API through the unmodified openai SDK: upload streamed to the blob store, list, content, delete."""

from __future__ import annotations

import os
from collections.abc import Iterator

import httpx
import openai
import pytest

from tests.support.stack import Stack


@pytest.fixture
def oai(stack: Stack) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0)


def test_upload_retrieve_content_and_delete(oai: openai.OpenAI, stack: Stack) -> None:
    body = b"The lighthouse keeper logs every ship.\n" * 50
    uploaded = oai.files.create(file=("log.txt", body), purpose="assistants")
    assert uploaded.object == "file" and uploaded.bytes == len(body) and uploaded.filename == "log.txt"
    assert oai.files.retrieve(uploaded.id).purpose == "assistants"
    assert oai.files.content(uploaded.id).content == body

    assert oai.files.delete(uploaded.id).deleted
    with pytest.raises(openai.NotFoundError):
        oai.files.retrieve(uploaded.id)
    with pytest.raises(openai.NotFoundError):
        oai.files.content(uploaded.id)
    blob_dir = stack.settings.data_dir / "files"
    assert not (blob_dir / uploaded.id).exists()


def test_an_upload_larger_than_the_json_request_limit_streams_to_the_blob_store(oai: openai.OpenAI) -> None:
    body = os.urandom(1024) * 3 * 1024  # 3 MiB, past DA_MAX_REQUEST_BYTES (1 MiB)
    uploaded = oai.files.create(file=("big.bin", body), purpose="user_data")
    assert uploaded.bytes == len(body)
    assert oai.files.content(uploaded.id).content == body
    oai.files.delete(uploaded.id)


def test_list_pages_by_purpose_newest_first(oai: openai.OpenAI) -> None:
    made = [oai.files.create(file=(f"p{index}.txt", b"x"), purpose="vision").id for index in range(3)]
    listed = [file.id for file in oai.files.list(purpose="vision", limit=1)]  # the SDK follows `after`
    assert listed[:3] == made[::-1]
    ascending = [file.id for file in oai.files.list(purpose="vision", order="asc")]
    assert [file_id for file_id in ascending if file_id in made] == made
    assert all(file.purpose == "vision" for file in oai.files.list(purpose="vision"))
    for file_id in made:
        oai.files.delete(file_id)


def test_bad_uploads_are_4xx_that_say_why(oai: openai.OpenAI, http: httpx.Client) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        oai.files.create(file=("a.txt", b"x"), purpose="nonsense")  # type: ignore[arg-type]
    assert "'purpose' must be one of" in refused.value.message
    no_file = http.post("/v1/files", data={"purpose": "assistants"}, files={"other": ("a.txt", b"x")})
    assert no_file.status_code == 400 and "no 'file' part" in no_file.json()["error"]["message"]
    not_multipart = http.post("/v1/files", json={"purpose": "assistants"})
    assert not_multipart.status_code == 400
    with pytest.raises(openai.NotFoundError):
        oai.files.retrieve("file-unknown")


@pytest.fixture
def small_limit_api(stack: Stack) -> Iterator[str]:
    settings = stack.settings.model_copy(update={"max_file_bytes": 100_000})
    with stack.other_api(settings) as url:
        yield url


def test_an_oversize_upload_is_413_naming_the_limit_and_leaves_nothing(small_limit_api: str, stack: Stack) -> None:
    client = openai.OpenAI(base_url=f"{small_limit_api}/v1", api_key="unused", max_retries=0)
    before = set((stack.settings.data_dir / "files").glob("*"))
    with pytest.raises(openai.APIStatusError) as refused:
        client.files.create(file=("big.txt", b"y" * 200_000), purpose="assistants")
    assert refused.value.status_code == 413 and "DA_MAX_FILE_BYTES" in refused.value.message
    # A body that claims no length is counted as it streams and cut off at the limit.
    chunked = httpx.post(
        f"{small_limit_api}/v1/files",
        content=iter(
            [b'--b\r\nContent-Disposition: form-data; name="file"; filename="x"\r\n\r\n'] + [b"z" * 65536] * 4
        ),
        headers={"content-type": "multipart/form-data; boundary=b"},
        timeout=60,
    )
    assert chunked.status_code == 413
    after = set((stack.settings.data_dir / "files").glob("*"))
    assert after <= before  # no blob and no partial blob left behind


def test_files_are_each_tenants_own(stack: Stack) -> None:
    settings = stack.settings.model_copy(update={"api_keys": ("alice:alice-key", "bob:bob-key")})
    with stack.other_api(settings) as url:
        alice = openai.OpenAI(base_url=f"{url}/v1", api_key="alice-key", max_retries=0)
        bob = openai.OpenAI(base_url=f"{url}/v1", api_key="bob-key", max_retries=0)
        mine = alice.files.create(file=("secret.txt", b"alice only"), purpose="assistants")
        with pytest.raises(openai.NotFoundError):
            bob.files.retrieve(mine.id)
        with pytest.raises(openai.NotFoundError):
            bob.files.delete(mine.id)
        assert mine.id not in [file.id for file in bob.files.list()]
        assert alice.files.retrieve(mine.id).id == mine.id


def test_an_upload_of_endless_form_fields_is_refused(http: httpx.Client) -> None:
    fields = b"".join(
        b'--b\r\nContent-Disposition: form-data; name="f%d"\r\n\r\n' % number + b"v" * 1000 + b"\r\n"
        for number in range(300)
    )
    body = fields + b'--b\r\nContent-Disposition: form-data; name="file"; filename="x"\r\n\r\nzz\r\n--b--\r\n'
    refused = http.post("/v1/files", content=body, headers={"content-type": "multipart/form-data; boundary=b"})
    assert refused.status_code == 400 and "form fields" in refused.json()["error"]["message"]


def test_tenant_quotas_answer_400_naming_the_setting(stack: Stack) -> None:
    settings = stack.settings.model_copy(
        update={
            "api_keys": ("quota:quota-key",),
            "max_files_per_tenant": 1,
            "max_vector_stores_per_tenant": 1,
        }
    )
    with stack.other_api(settings) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="quota-key", max_retries=0)
        client.files.create(file=("one.txt", b"one"), purpose="assistants")
        with pytest.raises(openai.BadRequestError) as files:
            client.files.create(file=("two.txt", b"two"), purpose="assistants")
        assert "DA_MAX_FILES_PER_TENANT" in files.value.message
        client.vector_stores.create(name="one")
        with pytest.raises(openai.BadRequestError) as stores:
            client.vector_stores.create(name="two")
        assert "DA_MAX_VECTOR_STORES_PER_TENANT" in stores.value.message
        registered = httpx.post(
            f"{url}/v1/vector-dbs", json={"vector_db_id": "two"}, headers={"authorization": "Bearer quota-key"}
        )
        assert registered.status_code == 400 and "DA_MAX_VECTOR_STORES_PER_TENANT" in registered.text
