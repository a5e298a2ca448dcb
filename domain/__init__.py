"""The runtime's own model: agents, sessions, turns, steps, events and what a turn may use, shared by every layer.

The dialects in api/ map their wire shapes onto it (the llama-stack dialect reuses much of it as its wire format).
These models travel through Temporal payloads and into the store's JSON columns, so they import nothing but
pydantic and are safe inside the workflow sandbox."""
