"""Temporal activities: the turn workflow's side effects (model calls and store writes)."""
