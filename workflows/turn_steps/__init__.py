"""The turn workflow's code by step kind: the classes TurnWorkflow (workflows/turn.py) is made of.

Workflow code, like turn.py: executed anew for each turn in the sandbox, never passed through
(tests/support/sandbox.py). May import domain and the stateless modules of workflows/ only."""
