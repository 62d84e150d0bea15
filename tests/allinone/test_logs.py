"""The log formats on real records: logfmt and JSON lines, the turn's fields, the
libraries' chatter, and the Redactor in force for both formats."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from allinone import logs
from allinone.core.log_context import turn_fields
from allinone.redaction import REDACTED, Redactor


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """A stream for the log; the root logger's handlers and level are restored after."""
    root = logging.getLogger()
    saved_handlers, saved_level = list(root.handlers), root.level
    stream = io.StringIO()
    yield stream
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in saved_handlers:
        root.addHandler(handler)
    root.setLevel(saved_level)


def _configure(stream: io.StringIO, log_format: str, level: str = "info") -> Redactor:
    logs.configure(level, log_format, stream)
    redactor = Redactor()
    redactor.add("plain-secret-value")
    redactor.install()
    return redactor


def test_text_lines_are_logfmt_with_the_turn_fields(captured: io.StringIO) -> None:
    stream = captured
    redactor = _configure(stream, "text")
    try:
        with turn_fields("sess_1", "turn_2"):
            logging.getLogger("allinone.test").warning("turn %s: it said %s", "turn_2", 'a "b"=c')
        logging.getLogger("allinone.test").info(
            "outside", extra={"device_id": "dev 1", "token": "plain-secret-value"}
        )
    finally:
        redactor.uninstall()
    first, second = stream.getvalue().splitlines()
    assert first.startswith("time=20")
    assert ' level=warning logger=allinone.test msg="turn turn_2: it said a \\"b\\"=c"' in first
    assert first.endswith(" session_id=sess_1 turn_id=turn_2")
    assert second.endswith(' msg=outside device_id="dev 1" token=[redacted]')
    assert "session_id" not in second


def test_json_lines_carry_the_same_keys_and_the_traceback(
    captured: io.StringIO,
) -> None:
    stream = captured
    redactor = _configure(stream, "json")
    try:
        with turn_fields("sess_1", "turn_2"):
            try:
                raise RuntimeError("boom with plain-secret-value")
            except RuntimeError:
                logging.getLogger("allinone.test").exception("failed: %s", "plain-secret-value")
    finally:
        redactor.uninstall()
    (line,) = stream.getvalue().splitlines()
    record = json.loads(line)
    assert record["level"] == "error" and record["logger"] == "allinone.test"
    assert record["msg"] == f"failed: {REDACTED}"
    assert record["session_id"] == "sess_1" and record["turn_id"] == "turn_2"
    assert "RuntimeError: boom with [redacted]" in record["exception"]
    assert "plain-secret-value" not in line


def test_library_chatter_is_dropped_unless_debug(captured: io.StringIO) -> None:
    stream = captured
    redactor = _configure(stream, "text")
    try:
        logging.getLogger("apscheduler.scheduler").info("Adding job tentatively")
        logging.getLogger("uvicorn.error").info("connection open")
        logging.getLogger("uvicorn.error").warning("a real problem")
    finally:
        redactor.uninstall()
    assert "Adding job" not in stream.getvalue() and "connection open" not in stream.getvalue()
    assert "a real problem" in stream.getvalue()
    stream.seek(0)
    stream.truncate()
    redactor = _configure(stream, "text", "debug")
    try:
        logging.getLogger("apscheduler.scheduler").info("Adding job tentatively")
    finally:
        redactor.uninstall()
    assert "Adding job" in stream.getvalue()
