"""The OpenAI Responses + Conversations dialect over the one turn runtime (see RESPONSES_DESIGN)."""
