"""The llama-stack Agents API 0.2.x dialect: agents, sessions, turns, tools and shields over the turn runtime.

May import the shared edge (api/services.py, guards/, turns/, streams/, http/) and the layers below api/; never
another dialect."""
