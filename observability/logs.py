"""Log output: plain lines, or one JSON object per line (`DA_LOG_FORMAT=json`) for a log shipper.

Every turn state change is one line (`log_turn_state`) carrying the turn, session and agent ids as
fields of their own. Uvicorn's loggers are given the same handler, so with JSON every line of the
API process parses too.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from domain.turns import TurnStatus

turn_log = logging.getLogger("durable_agents.turns")

_RECORD_FIELDS = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}
_UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access")


class JsonFormatter(logging.Formatter):
    def __init__(self, process: str) -> None:
        super().__init__()
        self._process = process

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "process": self._process,
            "logger": record.name,
            "message": record.getMessage(),
        }
        line.update({key: value for key, value in vars(record).items() if key not in _RECORD_FIELDS})
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def configure_logging(process: str, log_format: str, force: bool = True) -> None:
    """INFO and up to stderr, as text or JSON lines. With `force=False` a process whose logging is
    already set up (a test runner's) is left as it is."""
    root = logging.getLogger()
    if root.handlers and not force:
        return
    handler = logging.StreamHandler()
    if log_format == "json":
        handler.setFormatter(JsonFormatter(process))
        for name in _UVICORN_LOGGERS:
            logging.getLogger(name).handlers = [handler]
    else:
        handler.setFormatter(logging.Formatter(f"%(asctime)s {process} %(levelname)s %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)
    logging.captureWarnings(True)  # warnings as log lines too, not bare text on stderr


def log_turn_state(turn_id: str, session_id: str | None, agent_id: str | None, status: TurnStatus) -> None:
    """One line per turn state change: created (running), awaiting_input, running again, final."""
    turn_log.info(
        "turn %s is %s (session %s, agent %s)",
        turn_id,
        status.value,
        session_id,
        agent_id,
        extra={"turn_id": turn_id, "session_id": session_id, "agent_id": agent_id, "status": status.value},
    )
