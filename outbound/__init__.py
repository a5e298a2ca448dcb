"""Every request our code sends to an address a caller chose (documents, MCP servers) goes through here.

`policy` decides which addresses may be reached; `http` builds the HTTP clients that enforce it at
connect time, with timeouts, redirect limits and size limits enforced while a reply streams in.
Model base URLs are operator configuration and do not use it.

May import configuration only.
"""
