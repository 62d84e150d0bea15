"""How corebox writes its log: one line per event, readable by people and parseable.

Two formats, chosen with `--log-format`:

- `text` (the default): logfmt, `time=... level=info logger=allinone.app msg="..."`
  followed by the record's own fields (`session_id=... turn_id=...`), every value
  quoted when it holds a space, a quote or an `=`;
- `json`: one JSON object per line with the same keys, for log collectors.

Fields come from a record's `extra=` mapping and from `log_context.turn_fields`, which
the orchestration sets around the work of one turn, so every line logged while a turn runs
carries its session and turn ids without each call naming them. The Runtime's lines get
theirs from its own context, through the filter the composition root installs on the
handler (`runtime.log_context.Fields`), as record attributes.

WebSocket frame dumps never reach the log (a frame holds prompts and tool output).
Libraries' own INFO chatter (the scheduler's job bookkeeping, the HTTP server's process
and WebSocket accept lines, websockets' handshakes) is dropped below WARNING unless the
level is `debug`. The `Redactor` is installed on the handler by the composition root,
so secrets are replaced before either formatter sees a record.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from typing import Any, TextIO

from allinone.core import log_context

FORMATS = ("text", "json")
CHATTY_LIBRARIES = ("apscheduler", "uvicorn", "websockets")
# Client libraries that log request bodies or URLs below warning: a prompt or an API key
# must never reach the log, whatever the log level.
QUIET_LIBRARIES = ("openai", "httpx", "httpx2", "httpcore", "httpcore2", "mcp")

# How the WebSocket libraries begin a line that dumps a frame's content.
FRAME_DUMPS = ("> TEXT", "< TEXT", "> BINARY", "< BINARY", "> CONT", "< CONT")

_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "asctime",
    "taskName",
}


def fields(record: logging.LogRecord) -> dict[str, Any]:
    """The record's own fields: the turn context, then its `extra=` values."""
    found: dict[str, Any] = log_context.current()
    for key, value in record.__dict__.items():
        if key not in _STANDARD and not key.startswith("_"):
            found[key] = value
    return found


def _timestamp(record: logging.LogRecord) -> str:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
    return f"{stamp}.{int(record.msecs):03d}Z"


def _base(record: logging.LogRecord) -> dict[str, Any]:
    return {
        "time": _timestamp(record),
        "level": record.levelname.lower(),
        "logger": record.name,
        "msg": record.getMessage(),
    }


class TextFormatter(logging.Formatter):
    """logfmt: `key=value` pairs on one line; a traceback follows on its own lines."""

    def format(self, record: logging.LogRecord) -> str:
        pairs = {**_base(record), **fields(record)}
        line = " ".join(f"{key}={_logfmt(value)}" for key, value in pairs.items())
        trace = self._trace(record)
        return f"{line}\n{trace}" if trace else line

    def _trace(self, record: logging.LogRecord) -> str:
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        parts = [text for text in (record.exc_text, record.stack_info) if text]
        return "\n".join(parts)


class JsonFormatter(logging.Formatter):
    """One JSON object per line; a traceback is the `exception` string."""

    def format(self, record: logging.LogRecord) -> str:
        body = {**_base(record), **fields(record)}
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            body["exception"] = record.exc_text
        return json.dumps(body, default=str, ensure_ascii=False)


def _logfmt(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    if text and not any(c in text for c in ' "=\\\n\t'):
        return text
    return json.dumps(text, ensure_ascii=False)


class Chatter(logging.Filter):
    """Drops the libraries' records below WARNING (their start-up and per-connection
    bookkeeping), which only a `debug` log level shows."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            return True
        return not any(
            record.name == name or record.name.startswith(name + ".") for name in CHATTY_LIBRARIES
        )


class Frames(logging.Filter):
    """Drops the WebSocket libraries' frame dumps (`> TEXT '{...}' [262 bytes]`), at every
    level: a frame carries prompts, tool output and configuration, which never reach the
    log. Their handshake and connection lines stay (at `debug`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith(("websockets", "uvicorn")):
            return True
        return not record.getMessage().startswith(FRAME_DUMPS)


def add_format_flag(parser: argparse.ArgumentParser) -> None:
    """`--log-format` for a command that runs a long-lived process."""
    parser.add_argument(
        "--log-format",
        dest="log_format",
        choices=FORMATS,
        help="text (key=value, the default) or json (one object per line, for collectors)",
    )


def configure(level: str, log_format: str, stream: TextIO) -> logging.Handler:
    """Send the root logger's records to `stream` in `log_format` at `level`; return the
    handler (the composition root adds the Redactor to it)."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    handler.addFilter(Frames())
    if level.lower() != "debug":
        handler.addFilter(Chatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(logging.WARNING)
    return handler
