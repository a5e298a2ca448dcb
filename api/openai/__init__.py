"""The OpenAI family of wire dialects over the one turn runtime, and what the family shares.

- `responses/`: the Responses + Conversations API (docs/design.md);
- `agents/`: the Agents API (beta), `client.beta.agents` of the `openai` SDK (docs/agents-api.md);
- `platform/`: the platform resources beside them: files, uploads, vector stores, embeddings, webhook endpoints.

Shared at this root: the family's error envelope (errors.py) and its one router (routes.py), which the app mounts.
May import the shared edge (api/services.py, guards/, turns/, streams/, http/) and the layers below api/; never
the llama-stack dialect or the operators' routes (a contract in pyproject.toml).
"""
