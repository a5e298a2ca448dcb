"""The OpenAI Responses + Conversations dialect over the one turn runtime (docs/design.md).

May import the family's root (api/openai/errors.py), the shared edge (api/services.py, guards/, turns/, streams/,
http/) and the layers below api/."""
