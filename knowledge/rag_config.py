"""Which parts of a llama-stack RAG `query_config` this server honours, so that none is silently ignored.

Searches fuse vector and keyword rankings by reciprocal rank with the constant 60 (knowledge/search.py): a
`ranker` of type `rrf` with that `impact_factor` (or none) asks for exactly that; a `weighted` ranker or
another factor is refused. Queries are the turn's text joined by the `default` query generator's
`separator`; an `llm` query generator is refused.
"""

from __future__ import annotations

from typing import Any

from knowledge.search import RRF_K


def unsupported(config: dict[str, Any]) -> str | None:
    """What in the query_config this server does not do, said for the caller; None if it does all of it."""
    ranker = config.get("ranker")
    if ranker is not None:
        if not isinstance(ranker, dict) or ranker.get("type") != "rrf":
            return (
                f"query_config.ranker {ranker!r} is not supported: searches here fuse vector and keyword "
                f"rankings by reciprocal rank ({{'type': 'rrf', 'impact_factor': {RRF_K}}}), or use mode"
            )
        if ranker.get("impact_factor", RRF_K) != RRF_K or set(ranker) - {"type", "impact_factor"}:
            return f"query_config.ranker: only {{'type': 'rrf', 'impact_factor': {RRF_K}}} is supported here"
    generator = config.get("query_generator_config")
    if generator is not None:
        if not isinstance(generator, dict) or generator.get("type", "default") != "default":
            return (
                "query_config.query_generator_config: only the 'default' query generator (the content's text "
                "joined by its 'separator') is supported here"
            )
        if set(generator) - {"type", "separator"}:
            return "query_config.query_generator_config takes only 'type' and 'separator' here"
    return None
