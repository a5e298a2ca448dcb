"""The turns aggregate: agents, sessions, turns with their steps, events, settings and pending calls, toolgroups."""
