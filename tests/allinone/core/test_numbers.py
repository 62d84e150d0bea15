"""A whole number written in request text: ASCII digits within bounds, never an error."""

from __future__ import annotations

import pytest

from allinone.core.numbers import whole_number

TOP = 2**63 - 1


@pytest.mark.parametrize(
    ("text", "low", "high", "expected"),
    [
        ("1", 1, TOP, 1),
        ("007", 1, TOP, 7),
        ("000", 0, 10, 0),
        ("0", 1, TOP, None),  # below low
        (str(TOP), 1, TOP, TOP),
        (str(TOP + 1), 1, TOP, None),  # above high, same length
        ("9" * 5000, 1, TOP, None),  # past int()'s digit limit: refused before converting
        ("\u00b2", 1, TOP, None),  # a digit to str.isdigit, not to int()
        ("\u0662", 1, TOP, None),  # a digit int() reads, but not ASCII
        ("", 1, TOP, None),
        (" 1", 1, TOP, None),
        ("1_0", 1, TOP, None),
        ("-1", 0, TOP, None),
        ("1.0", 1, TOP, None),
    ],
)
def test_whole_number(text: str, low: int, high: int, expected: int | None) -> None:
    assert whole_number(text, low, high) == expected
