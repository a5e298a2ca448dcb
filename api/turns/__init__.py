"""Turn plumbing every dialect shares: a turn's workflow input, its MCP credentials, SDK retries, stuck and
unstarted turns, deletion with a turn's workflows. Imports no dialect package."""
