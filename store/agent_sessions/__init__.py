"""The Agents API aggregate: saved agents, sessions (which turns are theirs, tool results, input keys), automations."""
