"""The OpenAI Responses + Conversations dialect over the one turn runtime (docs/design.md).

May import the shared edge (api/services.py, guards/, turns/, streams/, http/) and the layers below api/; never
another dialect."""
