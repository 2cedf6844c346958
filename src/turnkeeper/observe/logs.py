"""Log output for `serve` and `worker`: lines of text, or one JSON object per line.

`--log-format json` writes each record as JSON with its time, level, logger and
message; a report's structured fields (`record.turnkeeper`: turn and
conversation ids, outcome, stop reason, iteration, elapsed, usage, cost) are
merged in, so a log pipeline can filter and sum them without parsing text.
A JSON line is redacted like a text line (`credentials.redact_value`): the
message, the traceback and the structured fields.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

from ..credentials import redact_value

FORMATS = ("text", "json")
TEXT = "%(asctime)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """One JSON object per record."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, "turnkeeper", None)
        if isinstance(fields, dict):
            data.update({k: v for k, v in fields.items() if k not in ("level", "message")})
        if record.exc_info:
            data["exception"] = record.exc_text or self.formatException(record.exc_info)
        return json.dumps(redact_value(data), ensure_ascii=False, default=str)


def configure(log_format: str = "text", level: int = logging.INFO) -> None:
    """Set up the root logger for a serving process: text lines or JSON lines on stderr.
    A root logger the application (or a test runner) already set up is left as it is."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter(TEXT))
    logging.basicConfig(level=level, handlers=[handler])
