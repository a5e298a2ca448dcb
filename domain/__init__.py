"""The Agents API's data model (llama-stack 0.2.x wire format), shared by every layer.

Written from ../shared/reference/llama-stack-agents-api.md. These models are what travels
on the wire, through Temporal payloads and into the store's JSON columns, so they import
nothing but pydantic and are safe inside the workflow sandbox.
"""
