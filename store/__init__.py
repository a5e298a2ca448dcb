"""Our durable record of agents, sessions, turns, steps and turn events.

Temporal forgets closed workflows after the namespace retention; this store does not.
SQLite by default, PostgreSQL by URL — the same SQLAlchemy 2 async code.

May import configuration and domain only.
"""

from store import automation_tables as automation_tables  # its tables join the metadata that migrations compare
from store import spend_tables as spend_tables  # its tables join the metadata that migrations compare
from store import webhook_tables as webhook_tables  # its tables join the metadata that migrations compare
