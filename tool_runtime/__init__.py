"""Server-side tools: the built-in toolgroups and MCP servers, listed and called by the runtime.

May import workflows (its contracts), store, outbound, configuration and domain."""
