"""Temporal workflows. One turn of an agent session is one `AgentTurn` workflow execution.

Every module here but turn.py and turn_steps/ (the workflow's own code) holds no state (constants, functions,
classes); the tests' sandbox passes them through (tests/support/sandbox.py).

May import domain only: workflow code runs in Temporal's sandbox.
"""
