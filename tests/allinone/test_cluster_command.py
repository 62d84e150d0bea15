"""`corebox cluster` against a real `corebox serve` on its embedded database: one
process, live, holding its in-process Runtime's connection."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from allinone.cluster_command import render
from tests.conftest import ROOT, Server


def _corebox(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COREBOX_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "allinone", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_one_process_of_an_embedded_database_is_listed(server: Server) -> None:
    where = ("--data-dir", str(server.data_dir), "--url", server.base_url)
    done = _corebox("cluster", *where, "--json")
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["object"] == "x_corebox.cluster" and body["shared"] is False
    live = [row for row in body["processes"] if row["live"]]
    assert [row["id"] for row in live] == [body["process_id"]]
    assert live[0]["pid"] == server.process.pid and live[0]["devices"]
    table = _corebox("cluster", *where)
    assert table.returncode == 0, table.stderr
    expected = render(body, int(live[0]["heartbeat_at"]))
    printed = table.stdout.splitlines()
    assert printed[:2] == expected[:2]
    # Columns but the heartbeat's age, which moves with the clock.
    row = printed[2].split("\t")
    assert row[:4] + row[5:] == expected[2].split("\t")[:4] + expected[2].split("\t")[5:]


def test_an_unreachable_server_is_exit_code_2(server: Server) -> None:
    done = _corebox("cluster", "--data-dir", str(server.data_dir), "--url", "http://127.0.0.1:1")
    assert done.returncode == 2 and "error" in done.stderr
