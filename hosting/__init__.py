"""What a process hosting the runtime sets up: its Temporal connection, its heap at start, its test-only crash points.

May import configuration, domain, observability and workflows; imported by the entry points, api/ and activities/."""
