"""Official SDK clients for tests, each closed at its test's teardown.

A client that is left to the garbage collector closes its pooled sockets in whatever
order a collection finalises them, which can report an unclosed socket inside a later,
unrelated test; `sdk_client` records each client and `tests/conftest.py` closes them
when the test that opened them ends."""

from __future__ import annotations

from typing import Any

from openai import OpenAI

_opened: list[OpenAI] = []


def sdk_client(**options: Any) -> OpenAI:
    """`OpenAI(**options)`, closed when the current test ends."""
    client = OpenAI(**options)
    _opened.append(client)
    return client


def close_opened() -> None:
    while _opened:
        _opened.pop().close()
