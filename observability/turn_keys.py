"""The span attributes and baggage keys that tie a trace's spans to a turn."""

TURN_ID = "durable_agents.turn_id"
SESSION_ID = "durable_agents.session_id"
AGENT_ID = "durable_agents.agent_id"
TURN_KEYS = (TURN_ID, SESSION_ID, AGENT_ID)
