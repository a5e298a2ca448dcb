"""llama-stack's `builtin::rag/knowledge_search` through the official llama-stack-client 0.2.12 `Agent`, unmodified,
over a vector DB filled by `rag_tool.insert`, with the offline model: the search is a tool_execution step of the
durable turn whose response is the retrieved chunks with their document ids, as the client's event logger prints."""

from __future__ import annotations

import re
from typing import Any

import pytest
from llama_stack_client import Agent, LlamaStackClient
from llama_stack_client.lib.agents.event_logger import EventLogger
from llama_stack_client.types.shared_params.document import Document

from configuration.model_specs import BUILTIN_EMBEDDING_MODEL_ID
from configuration.settings import OFFLINE_MODEL_ID
from tests.support.llama_agent import streamed, user_messages

DRILLS = "Lifeboat drills happen every Tuesday at noon on deck four."
GALLEY = "The galley serves herring on Sundays and rye bread on Fridays."
DOCUMENTS: list[Document] = [
    {"document_id": "num-0", "content": DRILLS, "metadata": {}},
    {"document_id": "num-1", "content": GALLEY, "metadata": {}},
]


@pytest.fixture
def vector_db(llama: LlamaStackClient, request: pytest.FixtureRequest) -> str:
    vector_db_id = "rag-" + re.sub(r"[^A-Za-z0-9_.:-]", "-", request.node.name)[-60:]
    llama.vector_dbs.register(vector_db_id=vector_db_id, embedding_model=BUILTIN_EMBEDDING_MODEL_ID)
    llama.tool_runtime.rag_tool.insert(vector_db_id=vector_db_id, chunk_size_in_tokens=128, documents=DOCUMENTS)
    return vector_db_id


def _agent(llama: LlamaStackClient, tool: Any) -> Agent:
    return Agent(llama, model=OFFLINE_MODEL_ID, instructions="Answer from the documents.", tools=[tool])


def _turn(agent: Agent, session_id: str, text: str, **options: Any) -> tuple[Any, str]:
    chunks = list(streamed(agent.create_turn(messages=user_messages(text), session_id=session_id, **options)))
    printed = "".join(str(log) for log in EventLogger().log(iter(chunks)))
    return chunks[-1].event.payload.turn, printed


def _document_ids(metadata: dict[str, object] | None) -> list[Any]:
    """The document ids in a knowledge_search result's metadata, which the client types as any objects."""
    assert metadata is not None
    ids = metadata["document_ids"]
    assert isinstance(ids, list)
    return ids


@pytest.mark.parametrize("group", ["builtin::rag/knowledge_search", "builtin::rag"])
def test_the_agent_searches_the_vector_db_and_answers_from_the_chunks(
    llama: LlamaStackClient, vector_db: str, group: str
) -> None:
    agent = _agent(llama, {"name": group, "args": {"vector_db_ids": [vector_db]}})
    session_id = agent.create_session("rag")
    turn, printed = _turn(agent, session_id, "Look up lifeboat drills in the documents.")

    assert [step.step_type for step in turn.steps] == ["inference", "tool_execution", "inference"]
    step = turn.steps[1]
    assert step.tool_calls[0].tool_name == "knowledge_search"
    assert step.tool_calls[0].arguments == {"query": "lifeboat drills"}
    response = step.tool_responses[0]
    assert response.metadata["document_ids"][0] == "num-0"
    assert all(document_id.startswith("num-") for document_id in response.metadata["document_ids"])
    texts = [item.text for item in response.content]
    assert texts[0].startswith("knowledge_search tool found") and "BEGIN of knowledge_search tool results" in texts[0]
    assert texts[1].startswith("Result 1\nContent: Lifeboat drills") and "'document_id': 'num-0'" in texts[1]
    assert texts[-1].startswith('The above results were retrieved to help answer the user\'s query: "lifeboat drills"')
    assert "Tuesday at noon" in turn.output_message.content
    # The event logger shows the call and its result as the 0.2.12 client prints them.
    assert "knowledge_search" in printed and "Tuesday at noon" in printed
    retrieved = agent.client.agents.steps.retrieve(
        agent_id=agent.agent_id, session_id=session_id, turn_id=turn.turn_id, step_id=step.step_id
    )
    assert _document_ids(retrieved.step.tool_responses[0].metadata) == response.metadata["document_ids"]


def test_query_config_limits_the_chunks_and_fills_the_template(llama: LlamaStackClient, vector_db: str) -> None:
    query_config = {"max_chunks": 1, "chunk_template": "[{index}] {chunk.content}\n", "mode": "vector"}
    agent = _agent(
        llama,
        {"name": "builtin::rag/knowledge_search", "args": {"vector_db_ids": [vector_db], "query_config": query_config}},
    )
    turn, _ = _turn(agent, agent.create_session("cfg"), "search the documents for herring")
    response = turn.steps[1].tool_responses[0]
    assert response.metadata["document_ids"] == ["num-1"]
    assert [item.text for item in response.content][1] == f"[1] {GALLEY}\n"


def test_a_vector_db_deleted_between_turns_is_a_tool_error_not_a_failed_turn(
    llama: LlamaStackClient, vector_db: str
) -> None:
    agent = _agent(llama, {"name": "builtin::rag/knowledge_search", "args": {"vector_db_ids": [vector_db]}})
    session_id = agent.create_session("deleted")
    first, _ = _turn(agent, session_id, "Look up lifeboat drills in the documents.")
    assert "Tuesday at noon" in first.output_message.content
    llama.vector_dbs.unregister(vector_db)

    second, _ = _turn(agent, session_id, "Look up lifeboat drills in the documents.")
    response = second.steps[1].tool_responses[0]
    assert "was not found" in response.content and vector_db in response.content
    assert [step.step_type for step in second.steps] == ["inference", "tool_execution", "inference"]
    assert "was not found" in second.output_message.content  # the model read the error and answered


def test_turn_documents_reach_the_model_of_an_agent_with_the_rag_tool(llama: LlamaStackClient, vector_db: str) -> None:
    """As in the 0.2.x reference: a turn's documents are appended to its last message, RAG tool or not."""
    agent = _agent(llama, {"name": "builtin::rag", "args": {"vector_db_ids": [vector_db]}})
    documents = [{"content": "The captain's parrot is called Flint.", "mime_type": "text/plain"}]
    turn, _ = _turn(agent, agent.create_session("docs"), "Who is Flint?", documents=documents)
    assert "Flint" in turn.output_message.content and "parrot" in turn.output_message.content


def test_knowledge_search_invoked_outside_a_turn_answers_like_the_rag_query(
    llama: LlamaStackClient, vector_db: str
) -> None:
    invoked = llama.tool_runtime.invoke_tool(
        tool_name="knowledge_search", kwargs={"query": "lifeboat drills", "vector_db_ids": [vector_db]}
    )
    assert invoked.error_code == 0 and _document_ids(invoked.metadata)[0] == "num-0"
    queried = llama.tool_runtime.rag_tool.query(content="lifeboat drills", vector_db_ids=[vector_db])
    assert [item.text for item in invoked.content] == [item.text for item in queried.content]
