"""The OpenAI platform resources the family's dialects share: files and uploads, vector stores and their files,
embeddings, webhook endpoints (docs/knowledge.md, docs/webhooks.md)."""
