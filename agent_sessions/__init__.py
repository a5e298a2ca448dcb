"""Agents API sessions below the wire: creating a session from a resolved agent and starting (feeding) its turns.

Both the dialect's routes (api/openai/agents) and the worker's automation deliveries (activities/
automation_delivery.py) create and feed sessions, with the same checks and the same turn start; what they share
lives here, in the stored forms of agents and sessions, so the worker never imports a wire dialect. A refusal is
a `SessionRefused`, which the dialect answers in its own error shape.
"""
