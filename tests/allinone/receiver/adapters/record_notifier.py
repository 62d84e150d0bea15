"""A test notifier adapter: records each notification id once in `notified.jsonl` (in
its working directory) and reports it delivered."""

import json
import sys
from pathlib import Path

notice = json.loads(sys.stdin.read())
log = Path("notified.jsonl")
seen = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
if not any(json.loads(line)["notification_id"] == notice["notification_id"] for line in seen):
    with log.open("a", encoding="utf-8") as handle:
        handle.write(
            json.dumps({"notification_id": notice["notification_id"], "summary": notice["summary"]})
            + "\n"
        )
print(
    json.dumps(
        {"schema_version": 1, "notification_id": notice["notification_id"], "delivered": True}
    )
)
