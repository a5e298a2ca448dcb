"""Temporal workflows. One turn of an agent session is one `AgentTurn` workflow execution."""
