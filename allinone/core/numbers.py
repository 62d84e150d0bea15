"""Whole numbers written in request text: path segments, query values, form fields."""

from __future__ import annotations


def whole_number(text: str, low: int, high: int) -> int | None:
    """`text` as an integer from `low` to `high`, or None. Only ASCII digits count
    (leading zeros allowed): `str.isdigit` also accepts digits `int` refuses (`²`), and
    `int` refuses more than 4,300 digits, so the length is bounded before converting."""
    digits = text.lstrip("0") or text[:1]
    if not (digits.isascii() and digits.isdigit()) or len(digits) > len(str(high)):
        return None
    value = int(digits)
    return value if low <= value <= high else None
