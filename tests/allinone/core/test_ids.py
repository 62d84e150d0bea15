"""Tier 1: IDs take their random digits from blocks of the system's random source."""

from __future__ import annotations

import re
import threading

from allinone.core.ids import Clock, Ids, RandomHex


def test_random_hex_gives_fresh_digits_of_the_asked_length_across_blocks() -> None:
    random_hex = RandomHex()
    # More than one block's worth, so the pool is refilled at least twice.
    drawn = [random_hex(6) for _ in range(3 * RandomHex.BLOCK // 6)]
    assert all(re.fullmatch(r"[0-9a-f]{12}", value) for value in drawn)
    assert len(set(drawn)) == len(drawn)
    assert len(random_hex(RandomHex.BLOCK + 10)) == 2 * (RandomHex.BLOCK + 10)


def test_ids_drawn_from_several_threads_never_repeat() -> None:
    ids = Ids(Clock())
    found: list[list[str]] = [[] for _ in range(4)]

    def draw(into: list[str]) -> None:
        into.extend(ids.new("evt") for _ in range(2000))

    threads = [threading.Thread(target=draw, args=(into,)) for into in found]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [value for into in found for value in into]
    assert len(set(every)) == len(every) == 8000
    assert all(re.fullmatch(r"evt_[0-9a-f]{28}", value) for value in every)


def test_an_injected_token_source_makes_both_ids_and_secrets() -> None:
    ids = Ids(Clock(), token_hex=lambda n: "ab" * n)
    assert ids.new("x").endswith("ab" * 6)
    assert ids.secret(4) == "abababab"
