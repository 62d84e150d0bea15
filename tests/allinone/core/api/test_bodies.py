"""Tier 1: which request heads declare no body (their body needs no deadline: it came
whole with the head)."""

from __future__ import annotations

import pytest
from starlette.types import Scope

from allinone.core.api.bodies import _bodyless


def scope(*headers: tuple[bytes, bytes]) -> Scope:
    return {"type": "http", "headers": [(b"host", b"x"), *headers]}


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ((), True),
        (((b"content-length", b"0"),), True),
        (((b"content-length", b"2"),), False),
        (((b"transfer-encoding", b"chunked"),), False),
        (((b"content-length", b"0"), (b"transfer-encoding", b"chunked")), False),
    ],
)
def test_a_head_without_length_or_chunking_declares_no_body(
    headers: tuple[tuple[bytes, bytes], ...], expected: bool
) -> None:
    assert _bodyless(scope(*headers)) is expected
