"""The OpenAI Responses + Conversations dialect over the one turn runtime (docs/design.md)."""
