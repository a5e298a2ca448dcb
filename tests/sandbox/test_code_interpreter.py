"""The Responses `code_interpreter` tool through the unmodified openai SDK against the real stack: a call runs
in the container's sandboxed kernel, keeps state across calls, writes a figure the response cites and the
Containers API serves, and streams its events; another tenant's container cannot be named."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from tests.support.stack import Stack

MODEL = "offline/echo"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def oai(stack: Stack) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0, timeout=120)


def _code(code: str) -> str:
    return "call tool code_interpreter " + json.dumps({"code": code})


def _calls(response: Any) -> list[Any]:
    return [item for item in response.output if item.type == "code_interpreter_call"]


def test_a_call_computes_and_the_kernel_keeps_state(oai: openai.OpenAI) -> None:
    source = oai.files.create(file=("numbers.csv", b"n\n40\n2\n"), purpose="user_data")
    tool: Any = {"type": "code_interpreter", "container": {"type": "auto", "file_ids": [source.id]}}
    first = oai.responses.create(
        model=MODEL,
        tools=[tool],
        input=_code("import pandas as pd\ntotal = int(pd.read_csv('/workspace/numbers.csv').n.sum())\nprint(total)"),
    )
    assert first.status == "completed", first.error
    [call] = _calls(first)
    assert call.status == "completed" and "pd.read_csv" in (call.code or "")
    assert call.outputs is not None and call.outputs[0].type == "logs" and "42" in call.outputs[0].logs
    assert "42" in first.output_text

    reference: Any = {"type": "code_interpreter", "container": call.container_id}
    second = oai.responses.create(model=MODEL, tools=[reference], input=_code("total * 2"))
    [again] = _calls(second)
    assert again.container_id == call.container_id
    assert again.outputs is not None and "84" in again.outputs[0].logs


def test_a_figure_is_cited_and_served_by_the_containers_api(oai: openai.OpenAI) -> None:
    code = "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.title('squares')"
    tool: Any = {"type": "code_interpreter", "container": {"type": "auto"}}
    response = oai.responses.create(model=MODEL, tools=[tool], input=_code(code))
    [call] = _calls(response)
    images = [output for output in call.outputs or [] if output.type == "image"]
    assert len(images) == 1
    message = next(item for item in response.output if item.type == "message")
    citations = [a for a in message.content[0].annotations if a.type == "container_file_citation"]
    assert citations and citations[0].filename.endswith(".png")
    cited = citations[0]
    assert images[0].url.endswith(f"/files/{cited.file_id}/content")
    content = oai.containers.files.content.retrieve(cited.file_id, container_id=cited.container_id).content
    assert content.startswith(PNG_SIGNATURE)
    listed = {file.id: file for file in oai.containers.files.list(cited.container_id)}
    assert listed[cited.file_id].source == "assistant"


def test_the_call_streams_its_events(oai: openai.OpenAI) -> None:
    tool: Any = {"type": "code_interpreter", "container": {"type": "auto"}}
    with oai.responses.stream(model=MODEL, tools=[tool], input=_code("print(6 * 7)")) as stream:
        kinds = [event.type for event in stream]
    expected = [
        "response.code_interpreter_call.in_progress",
        "response.code_interpreter_call_code.delta",
        "response.code_interpreter_call_code.done",
        "response.code_interpreter_call.interpreting",
        "response.code_interpreter_call.completed",
    ]
    found = [kind for kind in kinds if kind.startswith("response.code_interpreter_call")]
    assert found == expected
    assert kinds[-1] == "response.completed"


def test_an_unknown_or_foreign_container_is_refused(oai: openai.OpenAI) -> None:
    tool: Any = {"type": "code_interpreter", "container": "cntr_unknown"}
    with pytest.raises(openai.NotFoundError):
        oai.responses.create(model=MODEL, tools=[tool], input=_code("print(1)"))
    bad: Any = {"type": "code_interpreter", "container": {"type": "auto", "network_policy": {"type": "allowlist"}}}
    with pytest.raises(openai.BadRequestError) as refused:
        oai.responses.create(model=MODEL, tools=[bad], input="hi")
    assert "network_policy" in refused.value.message


def test_another_tenants_container_cannot_be_named(stack: Stack) -> None:
    settings = stack.settings.model_copy(update={"api_keys": ("ci-owner-0123", "ci-other-4567")})
    with stack.other_api(settings) as url:
        owner = openai.OpenAI(base_url=f"{url}/v1", api_key="ci-owner-0123", max_retries=0, timeout=120)
        other = openai.OpenAI(base_url=f"{url}/v1", api_key="ci-other-4567", max_retries=0, timeout=120)
        container = owner.containers.create(name="private")
        owner.containers.files.create(container.id, file=("secret.txt", b"0451"))
        tool: Any = {"type": "code_interpreter", "container": container.id}
        with pytest.raises(openai.NotFoundError):
            other.responses.create(
                model=MODEL, tools=[tool], input=_code("print(open('/workspace/secret.txt').read())")
            )
        shell: Any = {"type": "shell", "environment": {"type": "container_reference", "container_id": container.id}}
        with pytest.raises(openai.NotFoundError):
            other.responses.create(model=MODEL, tools=[shell], input="call tool shell")
        mine = owner.responses.create(
            model=MODEL, tools=[tool], input=_code("print(open('/workspace/secret.txt').read())")
        )
        [call] = _calls(mine)
        assert call.outputs is not None and call.outputs[0].logs.strip() == "0451"
