"""Temporal workflows. One turn of an agent session is one `AgentTurn` workflow execution.

Every module here but turn.py holds no state (constants, functions, classes): the worker passes
them through Temporal's sandbox instead of executing them anew for each turn (worker.workflow_runner).
"""
