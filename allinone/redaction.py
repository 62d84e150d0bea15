"""Keeping secrets out of the log, whatever the log level.

`Redactor` is a `logging.Filter` installed on the process's log handlers by the
composition root, so it sees every record, the uvicorn and websockets loggers' debug
output included (a WebSocket handshake logs its request headers). It rewrites a record's
message, arguments, `extra=` fields and exception text, replacing:

- the token after `Bearer` (any `Authorization` header or bearer value),
- corebox's own credential formats (`cbx-` API keys, `cbc-` Core keys, `cbd-` device
  credentials, `cbr_` instance tokens) and `sk-` style model keys, wherever they appear,
- every secret registered with `add` (the configured API and model keys, the Core key,
  the in-process Runtime's device credential), which have no recognisable shape.

A record is never dropped; only the secret text is replaced with `[redacted]`.
"""

from __future__ import annotations

import logging
import re

REDACTED = "[redacted]"
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message"}
MIN_SECRET_CHARS = 6
_PATTERN = re.compile(
    r"(?P<bearer>(?i:bearer)\s+)[^\s'\",;\\]+"
    r"|\bcb[xcd]-[0-9a-f]{8,}"
    r"|\bcbr_[0-9a-f]{8,}"
    r"|\bsk-[A-Za-z0-9_\-]{8,}"
)


class Redactor(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        self._secrets: set[str] = set()
        self._handlers: list[logging.Handler] = []

    def add(self, secret: str | None) -> None:
        """Redact `secret` wherever it appears from now on (short values are ignored:
        they would redact ordinary words)."""
        if secret and len(secret) >= MIN_SECRET_CHARS:
            self._secrets.add(secret)

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return _PATTERN.sub(_replacement, text)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: keep only its format string
            message = str(record.msg)
        record.msg = self.redact(message)
        record.args = None
        for key, value in list(record.__dict__.items()):  # the `extra=` fields too
            if key not in _STANDARD and isinstance(value, str):
                setattr(record, key, self.redact(value))
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        return True

    def install(self, logger: logging.Logger | None = None) -> None:
        """Filter every handler of `logger` (the root logger by default)."""
        for handler in (logger or logging.getLogger()).handlers:
            if self not in handler.filters:
                handler.addFilter(self)
                self._handlers.append(handler)

    def uninstall(self) -> None:
        for handler in self._handlers:
            handler.removeFilter(self)
        self._handlers.clear()


def _replacement(match: re.Match[str]) -> str:
    bearer = match.group("bearer")
    return f"{bearer}{REDACTED}" if bearer else REDACTED
