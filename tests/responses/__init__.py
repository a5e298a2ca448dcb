"""The OpenAI Responses + Conversations dialect: the openai and openai-agents SDKs, rendering, tools, durability."""
