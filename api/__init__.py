"""The HTTP edge: three wire dialects over the one turn runtime, in two families.

- api/llama_stack/: the llama-stack Agents API 0.2.x;
- api/openai/: the OpenAI family, the Responses + Conversations API (responses/), the Agents API beta
  (agents/) and the platform resources they share (platform/: files, vector stores, embeddings, webhooks);
- api/operations/: what operators call, whatever the dialect (health, readiness, metrics, tenant erasure).

Each family maps requests onto workflows and the store and exposes one router, which app.py mounts. The shared
edge they build on (services.py, turn_gateway.py, knowledge.py, model_routes.py, guards/, turns/, streams/,
http/) imports no family, and no family imports another (contracts in pyproject.toml). May import every
package below it (workflows and activities do not run here), and worker.py for a worker in the API process.
"""
