"""The llama-stack Agents API 0.2.x dialect: agents, sessions, turns, tools and shields over the turn runtime."""
