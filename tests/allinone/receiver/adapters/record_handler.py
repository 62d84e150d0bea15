"""A test handler adapter. Records each job it is given in `handled.jsonl` (in its
working directory), then acts by its first argument:

    reply TEXT   answer with TEXT
    accept TEXT  answer with TEXT and accept_contact: true
    hang         never answer (the receiver's timeout kills it; gives up after 60 s)
    wait         answer "released" once a `release` file appears (gives up after 60 s)
    garbage      print something that is not JSON
    big          print a reply larger than 32 KB
    crash        exit with status 3
"""

import json
import sys
import time
from pathlib import Path

job = json.loads(sys.stdin.read())
pending = [m["text"] for m in job["messages"] if m["pending"]]
with Path("handled.jsonl").open("a", encoding="utf-8") as log:
    log.write(json.dumps({"job_id": job["job_id"], "pending": pending}) + "\n")
mode = sys.argv[1]
if mode == "hang":
    time.sleep(60)
    sys.exit(1)
if mode == "wait":
    deadline = time.monotonic() + 60
    while not Path("release").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    text = "released"
elif mode == "garbage":
    print("this is not json")
    sys.exit(0)
elif mode == "big":
    text = "x" * 40_000
elif mode == "crash":
    sys.exit(3)
else:
    text = sys.argv[2]
print(
    json.dumps(
        {
            "schema_version": 1,
            "action": "reply",
            "message": text,
            "owner_summary": f"answered {len(pending)} message(s)",
            "accept_contact": mode == "accept",
        }
    )
)
