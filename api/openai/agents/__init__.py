"""The OpenAI Agents API (beta) over the turn runtime: `client.beta.agents` of the `openai` SDK.

Every request of this dialect carries `OpenAI-Beta: agents=v1` (routing.py); a session turn is a detached
turn workflow started by the session service (agent_sessions/), its events the turn's stored events rendered
as session events (session_events.py). docs/agents-api.md says what is supported.
"""
