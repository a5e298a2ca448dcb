"""What the tests share: the stack they start (Temporal, worker, API), the scripted model, helper servers and
processes, databases, the client venvs. Test files live in the area folders beside this package."""
