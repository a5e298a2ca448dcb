"""The HTTP facade: llama-stack Agents API routes onto Temporal workflows and the store."""
