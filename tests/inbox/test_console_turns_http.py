"""The console's turns and sessions pages over plain HTTP: each list shows the signed-in tenant's own responses,
conversations, llama-stack sessions and Agents API sessions with their turns' status, newest first; a turn's
page shows its steps with their texts escaped, usage and the link to its workflow in the Temporal UI; another
tenant's turn, its page and its event stream, is a 404 exactly like an unknown one."""

from __future__ import annotations

import re
import time

import httpx
import pytest

from tests.agents_beta.test_spend_control import WEATHER
from tests.inbox.waiting import Tenant, approval_response, function_call_response, paused_llama_turn, waiting_session
from tests.support.scripted_model import ScriptedModel, ThreadedServer, text
from tests.support.stack import SCRIPTED_MODEL

XSS = "<img src=x onerror=alert(1)>"
FIRST_PAGE_MOST = 200_000


def console(tenant: Tenant) -> httpx.Client:
    """A browser's view of the console: the key in its cookie, as signing in leaves it."""
    key = tenant.http.headers["authorization"].removeprefix("Bearer ")
    return httpx.Client(base_url=str(tenant.http.base_url), cookies={"da_console_key": key}, timeout=60)


def turn_of(page: str, line_id: str) -> str:
    """The turn a list line links to."""
    found = re.search(rf'<tr data-id="{re.escape(line_id)}">.*?href="/console/turns/([^"]+)"', page, re.S)
    assert found, f"{line_id} is not listed with a turn"
    return found.group(1)


@pytest.fixture(scope="module")
def consoles(tenants: tuple[Tenant, Tenant]):
    made = (console(tenants[0]), console(tenants[1]))
    yield made
    for client in made:
        client.close()


def test_each_list_shows_the_tenants_own_items_newest_first_with_their_status(
    tenants: tuple[Tenant, Tenant], consoles: tuple[httpx.Client, httpx.Client], model: ScriptedModel
) -> None:
    mine, theirs = tenants
    model.script(text("first"), text("second"), text("not yours"))
    first = mine.openai.responses.create(model=SCRIPTED_MODEL, input="one")
    second = mine.openai.responses.create(model=SCRIPTED_MODEL, input="two")
    foreign = theirs.openai.responses.create(model=SCRIPTED_MODEL, input="three")
    conversation = mine.openai.conversations.create()
    model.script(text("in a conversation"))
    mine.openai.responses.create(model=SCRIPTED_MODEL, input="hi", conversation=conversation.id)
    paused = paused_llama_turn(mine, model)
    session = waiting_session(mine, model)

    responses = consoles[0].get("/console/turns", params={"view": "responses"})
    assert responses.status_code == 200 and "'self'" in responses.headers["content-security-policy"]
    assert responses.text.index(second.id) < responses.text.index(first.id)  # newest first
    assert foreign.id not in responses.text and "completed" in responses.text
    assert foreign.id in consoles[1].get("/console/turns", params={"view": "responses"}).text

    conversations = consoles[0].get("/console/turns", params={"view": "conversations"}).text
    assert conversation.id in conversations
    assert conversation.id not in consoles[1].get("/console/turns", params={"view": "conversations"}).text

    sessions = consoles[0].get("/console/turns", params={"view": "sessions"}).text
    assert turn_of(sessions, paused["session_id"]) == paused["turn_id"] and "awaiting input" in sessions
    assert paused["session_id"] not in consoles[1].get("/console/turns", params={"view": "sessions"}).text

    agent_sessions = consoles[0].get("/console/turns", params={"view": "agent_sessions"}).text
    assert session.id in agent_sessions and "awaiting input" in turn_row(agent_sessions, session.id)
    assert session.id not in consoles[1].get("/console/turns", params={"view": "agent_sessions"}).text

    refused = consoles[0].get("/console/turns", params={"view": "everything"})
    assert refused.status_code == 400 and "view must be one of" in refused.text
    unknown = consoles[0].get("/console/turns", params={"view": "responses", "after": foreign.id})
    assert unknown.status_code == 400  # another tenant's id is no cursor of this list


def turn_row(page: str, line_id: str) -> str:
    found = re.search(rf'<tr data-id="{re.escape(line_id)}">.*?</tr>', page, re.S)
    assert found
    return found.group(0)


def test_a_turn_page_shows_its_steps_escaped_with_usage_and_its_workflow_link_and_is_the_tenants_alone(
    tenants: tuple[Tenant, Tenant], consoles: tuple[httpx.Client, httpx.Client], model: ScriptedModel
) -> None:
    mine, _ = tenants
    model.script(text(XSS))
    response = mine.openai.responses.create(model=SCRIPTED_MODEL, input="say it")
    listed = consoles[0].get("/console/turns", params={"view": "responses"}).text
    turn_id = turn_of(listed, response.id)

    page = consoles[0].get(f"/console/turns/{turn_id}")
    assert page.status_code == 200 and len(page.content) <= FIRST_PAGE_MOST
    assert XSS not in page.text and "&lt;img src=x onerror=alert(1)&gt;" in page.text
    assert 'class="step kind-inference' in page.text and '<rect class="fill"' in page.text
    assert re.search(r"\d+ in / \d+ out tokens", page.text)
    assert f"http://127.0.0.1:8233/namespaces/default/workflows/turn-{turn_id}" in page.text
    assert 'id="live"' not in page.text  # a finished turn has nothing to follow

    replayed = consoles[0].get(f"/console/turns/{turn_id}/events")
    assert replayed.status_code == 200 and '"turn_complete"' in replayed.text
    last_id = int(re.findall(r"^id: (\d+)$", replayed.text, re.M)[-1])
    finished = consoles[0].get(f"/console/turns/{turn_id}/events", headers={"last-event-id": str(last_id)})
    assert finished.status_code == 200 and finished.text == ""  # a reconnecting browser is told nothing twice

    assert consoles[1].get(f"/console/turns/{turn_id}").status_code == 404
    assert consoles[1].get(f"/console/turns/{turn_id}/events").status_code == 404
    assert consoles[0].get("/console/turns/no-such-turn").status_code == 404
    with httpx.Client(base_url=str(mine.http.base_url)) as anonymous:
        signed_out = anonymous.get(f"/console/turns/{turn_id}", follow_redirects=False)
        assert signed_out.status_code == 303 and signed_out.headers["location"] == "/console/sign-in"


def test_a_responses_turns_page_shows_its_clients_wait_and_each_response_and_an_open_wait_while_it_waits(
    tenants: tuple[Tenant, Tenant],
    consoles: tuple[httpx.Client, httpx.Client],
    model: ScriptedModel,
    mcp: ThreadedServer,
) -> None:
    mine, _ = tenants
    paused = function_call_response(mine, model)
    call = next(item for item in paused.output if item.type == "function_call")
    time.sleep(1.0)  # the caller runs its function
    model.script(text("It is sunny."))
    done = mine.openai.responses.create(
        model=SCRIPTED_MODEL,
        previous_response_id=paused.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}],
        tools=[WEATHER],
    )
    turn_id = turn_of(consoles[0].get("/console/turns", params={"view": "responses"}).text, done.id)
    page = consoles[0].get(f"/console/turns/{turn_id}").text
    kinds = re.findall(r'class="step kind-(\w+)', page)
    labels = re.findall(r'<span class="step-label">([^<]*)</span>', page)
    assert kinds[0] == "inference" and kinds[-1] == "inference" and "tool_execution" in kinds, (kinds, labels)
    assert "includes the wait for the client" in labels[kinds.index("tool_execution")]
    assert paused.id in page and done.id in page and "It is sunny." in page

    approval = approval_response(mine, model, mcp)
    listed = consoles[0].get("/console/turns", params={"view": "responses"}).text
    waiting = consoles[0].get(f"/console/turns/{turn_of(listed, approval.id)}").text
    assert "awaiting input" in waiting and 'id="live"' in waiting
    assert re.findall(r'class="step kind-(\w+)', waiting)[-1] == "wait"
    assert "Waiting for an approval" in waiting


def test_a_turn_with_a_huge_tool_output_still_makes_a_small_page(
    tenants: tuple[Tenant, Tenant], consoles: tuple[httpx.Client, httpx.Client], model: ScriptedModel
) -> None:
    mine, _ = tenants
    paused = paused_llama_turn(mine, model)
    path = f"/v1/agents/{paused['agent_id']}/session/{paused['session_id']}/turn/{paused['turn_id']}"
    call = mine.http.get(path).json()["output_message"]["tool_calls"][0]
    model.script(text("done"))
    huge = {"call_id": call["call_id"], "tool_name": call["tool_name"], "content": "x" * 500_000}
    resumed = mine.http.post(f"{path}/resume", json={"tool_responses": [huge], "stream": False})
    assert resumed.status_code == 200, resumed.text

    page = consoles[0].get(f"/console/turns/{paused['turn_id']}")
    assert page.status_code == 200 and len(page.content) <= FIRST_PAGE_MOST, len(page.content)
    assert "more characters not shown here" in page.text and "done" in page.text
