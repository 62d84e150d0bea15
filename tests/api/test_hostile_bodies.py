"""The hand-written hostile-body generator (`tests.api.hostile`) over every route that
takes a JSON body: no answer is a 5xx, and on routes that start no background work a
rejected body leaves the database exactly as it was (the busy routes run last, so
work they start cannot be mistaken for a write by a rejected request)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.api import hostile
from tests.api.support import DatabaseWatch, core_key
from tests.api.test_bad_input import Edge, _resources
from tests.conftest import start_server

# Accepted bodies here start work that keeps writing after the reply (turns, set-ups).
BACKGROUND = {
    "/v1/agents/sessions",
    "/v1/agents/sessions/{session_id}/events",
    "/v1/agents/environments",
}


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Edge]:
    server = start_server(tmp_path_factory.mktemp("hostile") / "data")
    try:
        checked = Edge(server, core_key(server.data_dir), {})
        _resources(checked)
        yield checked
    finally:
        server.stop()


def _filled(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str) and value[1:-1] in ids and value == "{" + value[1:-1] + "}":
        return ids[value[1:-1]]
    if isinstance(value, dict):
        return {key: _filled(item, ids) for key, item in value.items()}
    if isinstance(value, list):
        return [_filled(item, ids) for item in value]
    return value


def test_no_hostile_body_gets_a_5xx_or_a_write_when_rejected(target: Edge) -> None:
    seeds = sorted(hostile.SEEDS, key=lambda seed: seed[1] in BACKGROUND)
    failures: list[str] = []
    sent = 0
    watch = DatabaseWatch(target.server.data_dir)
    try:
        for method, template, seed in seeds:
            quiet = template not in BACKGROUND
            for description, body in hostile.mutations(_filled(seed, target.ids)):
                status, reply = target.send(method, template, body)
                sent += 1
                moved = watch.moved()
                if status >= 500:
                    failures.append(f"{status} {method} {template} {description}: {reply}")
                elif status >= 400 and quiet and moved:
                    failures.append(f"{method} {template} {description}: rejected but wrote")
    finally:
        watch.close()
    assert sent > 2000
    assert not failures, "\n".join(failures[:20])
