"""OpenAI platform resources beside the Responses dialect: files, vector stores, embeddings, webhook endpoints."""
