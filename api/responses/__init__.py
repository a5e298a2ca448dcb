"""The OpenAI Responses + Conversations dialect of the API (see RESPONSES_DESIGN.md)."""
