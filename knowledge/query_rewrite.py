"""`rewrite_query`: a question turned into the words a search should look for.

OpenAI rewrites with a model and does not say how; ours is deterministic and offline, so the same question
always searches the same way and no text leaves the server: the question's words, lower-cased, without
punctuation, without English function words ("what", "is", "the", "please" …) and without repeats, in their
order. "What are the lifeboat drill times on the ferry?" becomes "lifeboat drill times ferry". A question of
nothing but function words is searched as asked. The page's `search_query` shows what was searched.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")
_FUNCTION_WORDS = """
    a about above after again against all am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her
    here hers herself him himself his how i if in into is it its itself just let me more most my myself no nor
    not now of off on once only or other our ours ourselves out over own please same she should so some such
    tell than that the their theirs them themselves then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you your yours
    yourself yourselves find show give know get anything something information info
"""
STOPWORDS = frozenset(_FUNCTION_WORDS.split())


def rewrite(query: str) -> str:
    """The query's search words (see the module's docstring), or the query itself when none are left."""
    kept: list[str] = []
    for word in _WORD.findall(query.lower()):
        if word not in STOPWORDS and word not in kept:
            kept.append(word)
    return " ".join(kept) or query
