"""The Temporal client's side of a turn, below the wire dialects: what starts a turn's workflow, shared by the API
and by the worker's activities that start turns (an automation delivering to a session)."""
