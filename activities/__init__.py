"""Temporal activities: the turn workflow's side effects (model calls, tool calls, store writes).

May import providers, tool_runtime, hosting, workflows (its contracts), store, observability and below; never api."""
