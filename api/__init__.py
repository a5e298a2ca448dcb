"""The HTTP edge: one adapter package per wire dialect over the one turn runtime.

api/llama_stack/ (llama-stack Agents API 0.2.x) and api/openai/responses/ (OpenAI Responses + Conversations) map
requests onto workflows and the store; api/operations/ serves health and metrics. The shared edge they build
on (services.py, turn_gateway.py, guards/, turns/, streams/, http/) imports no dialect package. May import
every package below it (workflows, activities do not run here), worker.py for a worker in the API process."""
