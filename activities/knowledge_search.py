"""Running the knowledge tools of a turn: a Responses `file_search` call and a llama-stack `knowledge_search`
call, each searched with the same function as POST /v1/vector_stores/{id}/search, within the turn's tenant.

A store the turn names that no longer exists (deleted between turns, or since the request was accepted) is
the call's answer — an error the model reads — not a failed turn. An embedding model that cannot answer is
retried like an MCP server that cannot be reached. Only chunk texts, ids and scores leave the store: no vector
and no file's bytes travel in the activity's result.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from domain.content import TextContentItem, ToolCall, ToolResponse
from knowledge import rag_config
from knowledge.embeddings import EmbeddingCatalog, EmbeddingUnavailable
from knowledge.rag_results import DEFAULT_TEMPLATE, file_search_answer, rag_answer
from knowledge.search import Hybrid, SearchResult, UnknownFilterKey, Unsearchable, search, searchable_model
from store.knowledge.vector_stores import VectorStores
from workflows.contracts import FileSearchConfig, ServerTool
from workflows.knowledge_tools import FILE_SEARCH

MAX_QUERIES = 10
RAG_DEFAULT_CHUNKS = 5
RAG_DEFAULT_TOKENS = 4096


class SearchUnavailable(Exception):
    """The store's embedding model could not answer; worth another attempt."""


class _Missing(Exception):
    def __init__(self, vector_store_id: str) -> None:
        super().__init__(vector_store_id)
        self.vector_store_id = vector_store_id


def _queries(arguments: dict[str, Any]) -> list[str]:
    """The model's query (or queries): `query` as its schema asks, or `queries` as OpenAI's models send."""
    found = arguments.get("queries")
    queries = [str(q) for q in found] if isinstance(found, list) else []
    if isinstance(arguments.get("query"), str):
        queries.insert(0, arguments["query"])
    return [query for query in (q.strip() for q in queries) if query][:MAX_QUERIES]


class KnowledgeSearch:
    def __init__(self, stores: VectorStores, embeddings: EmbeddingCatalog, max_results: int) -> None:
        """`max_results`: the most results one call returns (DA_MAX_SEARCH_RESULTS), whatever it asks."""
        self._stores = stores
        self._embeddings = embeddings
        self._max_results = max_results

    async def run(self, tenant: str, tool: ServerTool, call: ToolCall) -> ToolResponse:
        arguments = call.arguments if isinstance(call.arguments, dict) else {}
        if tool.toolgroup_id == FILE_SEARCH:
            return await self._file_search(tenant, call, FileSearchConfig.model_validate(tool.args[FILE_SEARCH]))
        return await self._knowledge_search(tenant, call, tool.args, arguments)

    async def _search(
        self,
        tenant: str,
        store_ids: list[str],
        queries: list[str],
        max_results: int,
        filters: dict[str, Any] | None = None,
        threshold: float = 0.0,
        hybrid: Hybrid | None = None,
    ) -> list[SearchResult]:
        """The best results across the stores, best first. Raises _Missing for a store that is gone, and
        UnknownFilterKey when no store's files have the attributes the filters name."""
        results: list[SearchResult] = []
        lacking: list[UnknownFilterKey] = []
        for store_id in store_ids:
            # A vector store's id, or (builtin::rag) the tenant's own name of a llama-stack vector DB.
            store = await self._stores.get_vector_db(tenant, store_id)
            if store is None:
                raise _Missing(store_id)
            try:
                model = searchable_model(self._embeddings, store, datetime.now(UTC))
                results += await search(
                    self._stores, model, tenant, store, queries, max_results, filters, threshold, hybrid
                )
            except UnknownFilterKey as missing_key:
                lacking.append(missing_key)  # this store's files lack the attribute; another's may have it
            except EmbeddingUnavailable as unavailable:
                raise SearchUnavailable(str(unavailable)) from None
            except Unsearchable as unsearchable:
                raise SearchUnavailable(str(unsearchable)) from None
        if lacking and len(lacking) == len(store_ids):
            raise lacking[0]
        return sorted(results, key=lambda result: -result.score)[:max_results]

    async def _file_search(self, tenant: str, call: ToolCall, config: FileSearchConfig) -> ToolResponse:
        arguments = call.arguments if isinstance(call.arguments, dict) else {}
        queries = _queries(arguments)
        record: dict[str, Any] = {"queries": queries, "results": None, "status": "completed"}
        hybrid = None
        if config.embedding_weight is not None and config.text_weight is not None:
            hybrid = Hybrid(config.embedding_weight, config.text_weight)
        error = None
        results: list[SearchResult] = []
        if not queries:
            error = 'Error: file_search needs a "query": the words to look up.'
        else:
            limit = min(config.max_num_results, self._max_results)
            try:
                results = await self._search(
                    tenant, config.vector_store_ids, queries, limit, config.filters, config.score_threshold, hybrid
                )
            except _Missing as missing:
                error = (
                    f"Error: vector store {missing.vector_store_id} was not found (it was deleted, or it is "
                    "not this account's); answer without its files."
                )
            except UnknownFilterKey as unknown:
                error = f"Error: {unknown}"
        if error is not None:
            record["status"] = "failed"
            return _response(call, error, {"file_search": record, "is_error": True})
        if config.include_results:
            record["results"] = [
                {
                    "file_id": result.file_id,
                    "filename": result.filename,
                    "score": round(result.score, 6),
                    "attributes": result.attributes,
                    "text": result.text,
                }
                for result in results
            ]
        return _response(call, file_search_answer(results, queries), {"file_search": record})

    async def _knowledge_search(
        self, tenant: str, call: ToolCall, args: dict[str, Any], arguments: dict[str, Any]
    ) -> ToolResponse:
        """llama-stack's knowledge_search: `vector_db_ids` and `query_config` from the toolgroup's args."""
        store_ids = args.get("vector_db_ids")
        if isinstance(store_ids, str):
            store_ids = [store_ids]
        if not isinstance(store_ids, list) or not store_ids:
            text = "Error: builtin::rag needs args.vector_db_ids naming vector DBs."
            return _response(call, text, {"is_error": True})
        config = args.get("query_config") if isinstance(args.get("query_config"), dict) else {}
        assert isinstance(config, dict)
        queries = _queries(arguments)
        if not queries:
            return _response(call, 'Error: knowledge_search needs a "query".', {"is_error": True})
        if (refused := rag_config.unsupported(config)) is not None:
            return _response(call, f"Error: {refused}.", {"is_error": True})
        separator = str((config.get("query_generator_config") or {}).get("separator", " "))
        query = separator.join(queries)
        max_chunks = _bounded(config.get("max_chunks"), RAG_DEFAULT_CHUNKS, self._max_results)
        max_tokens = _bounded(config.get("max_tokens_in_context"), RAG_DEFAULT_TOKENS, 1_000_000)
        mode = config.get("mode") or ("hybrid" if config.get("ranker") else None)
        hybrid = {"keyword": Hybrid(0.0, 1.0), "hybrid": Hybrid()}.get(str(mode)) if mode else None
        try:
            results = await self._search(tenant, [str(i) for i in store_ids], [query], max_chunks, hybrid=hybrid)
        except _Missing as missing:
            text = (
                f"Error: vector DB {missing.vector_store_id} was not found (it was unregistered or deleted, "
                "or it is not this account's)."
            )
            return _response(call, text, {"is_error": True})
        template = config.get("chunk_template")
        texts, metadata = rag_answer(
            results, query, max_tokens, template if isinstance(template, str) else DEFAULT_TEMPLATE
        )
        if texts is None:
            return _response(call, [], {})
        return _response(call, [TextContentItem(text=text) for text in texts], metadata)


def _bounded(value: Any, default: int, largest: int) -> int:
    return min(value, largest) if isinstance(value, int) and value >= 1 else default


def _response(call: ToolCall, content: str | list[TextContentItem], metadata: dict[str, Any]) -> ToolResponse:
    return ToolResponse(call_id=call.call_id, tool_name=call.tool_name, content=content, metadata=metadata or None)
