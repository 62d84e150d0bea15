"""`corebox receiver check`, as a user runs it: the platform's view of the token, one
synthetic inbound message to the handler and one synthetic notification, nothing sent
to any contact; the handler is reported `verified_reported` only after both passed, and
only while its configuration is the one that passed."""

from __future__ import annotations

import json
from pathlib import Path

from tests.allinone.comms.comms_helpers import pair
from tests.allinone.receiver.receiver_helpers import (
    make_side,
    once,
    receiver,
    write_private,
)
from tests.conftest import Server


def test_a_passing_self_check_reports_the_handler_verified(server: Server, tmp_path: Path) -> None:
    alice, bob = pair(server.base_url)
    side = make_side(
        server, bob, tmp_path / "bob", handler_args=("reply", "checked"), notifier=True
    )
    done = receiver(side, "check")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["ok"] is True and result["handler_state"] == "verified_reported"
    assert result["handler"] == {"state": "verified", "action": "reply"}
    assert result["notifier"]["state"] == "delivered"
    assert result["platform"]["role_id"] == bob.role_id and result["platform"]["is_primary"]
    [handled] = side.handled()
    assert handled["job_id"].startswith("check_") and "self-check" in handled["pending"][0]
    assert [n["notification_id"] for n in side.notified()] == [f"{handled['job_id']}-notice"]
    # Nothing reached any contact, and the platform holds the self-report.
    assert bob.events().body["items"] == [] and alice.events().body["items"] == []
    assert bob.get("/communication/receiver").body["handler_state"] == "verified_reported"
    once(side)
    assert bob.get("/communication/receiver").body["handler_state"] == "verified_reported"

    # A changed handler configuration is no longer the verified one.
    config = json.loads(side.config.read_text())
    config["handler"]["args"][-1] = "changed"
    write_private(side.config, json.dumps(config))
    once(side)
    assert bob.get("/communication/receiver").body["handler_state"] == "configured"


def test_a_handler_that_fails_the_probe_is_not_verified(server: Server, tmp_path: Path) -> None:
    _, bob = pair(server.base_url)
    side = make_side(server, bob, tmp_path / "bob", handler_args=("garbage",), notifier=True)
    done = receiver(side, "check")
    assert done.returncode == 2
    result = json.loads(done.stdout)
    assert result["handler"] == {"state": "failed", "code": "HANDLER_MALFORMED_OUTPUT"}
    assert result["ok"] is False and result["handler_state"] == "configured"
    assert bob.get("/communication/receiver").body["handler_state"] == "configured"
