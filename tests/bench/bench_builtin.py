"""Harness overhead of the `builtin` harness per model round trip (a script; pytest does
not collect it).

    python tests/bench/bench_builtin.py [--turns 50] [--protocol chat_completions]

Starts `python -m allinone serve` (or COREBOX_BINARY) on a loopback port and the
project's own model server (tests/support/model_server.py) in this process. Each turn is
one function-tool round trip: the model asks for a tool, the client answers, the model
replies. All clocks are this process's `time.perf_counter()` (the model server runs in a
thread here), and the events are read from raw SSE, so the figures are corebox's own
time plus loopback I/O:

- model -> client: from the model server's last byte of a reply (the chunked body's
  terminator) to the client reading the event corebox derives from it (the
  `function_call` item for a tool call, the message's `item.done` for text): the
  Runtime's stream handling, the frame over the WebSocket, Core's projection and commit,
  and the SSE write;
- client -> model: from the client sending the tool result (`POST .../events`) to the
  model server reading corebox's next model request: admission, delivery to the
  Runtime, the receipt, and the harness building and sending the next call.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))
import bench  # noqa: E402  (the shared server helpers beside this script)

from tests.support.model_server import ModelServer, Reply  # noqa: E402

TOOL = {
    "type": "function",
    "name": "lookup",
    "description": "Look something up.",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
}


def post(conn: http.client.HTTPConnection, path: str, body: dict[str, Any]) -> float:
    """POST and return when it was sent."""
    sent = time.perf_counter()
    conn.request(
        "POST",
        path,
        body=json.dumps(body).encode(),
        headers={**bench.HEADERS, "Content-Type": "application/json"},
    )
    response = conn.getresponse()
    response.read()
    if response.status != 202:
        raise bench.BenchError(f"POST {path} answered {response.status}")
    return sent


def session(port: int, model: ModelServer, protocol: str) -> str:
    model.queue(Reply.say("ready"))
    creation = bench.EventStream(
        port,
        "POST",
        "/v1/agents/sessions",
        {
            "agent": {"model": "bench-model", "tools": [TOOL]},
            "environment": {"type": "none"},
            "input": "warm up",
            "stream": True,
            "x_corebox": {
                "model_provider": {
                    "protocol": protocol,
                    "base_url": model.base_url,
                    "api_key": "sk-bench",
                }
            },
        },
    )
    try:
        deadline = time.monotonic() + bench.TURN_DEADLINE_SECONDS
        event_type, data = creation.next(deadline)
        session_id = str(data["session"]["id"])  # type: ignore[index]
        while event_type != "agent.session.idle":
            event_type, data = creation.next(deadline)
            if event_type == "agent.session.turn.failed":
                raise bench.BenchError(f"warm-up turn failed: {json.dumps(data)[:300]}")
    finally:
        creation.close()
    return session_id


def round_trips(port: int, model: ModelServer, turns: int, protocol: str) -> dict[str, list[float]]:
    session_id = session(port, model, protocol)
    path = f"/v1/agents/sessions/{session_id}/events"
    stream = bench.EventStream(port, "GET", path)
    poster = http.client.HTTPConnection("127.0.0.1", port, timeout=bench.TURN_DEADLINE_SECONDS)
    out: list[float] = []
    back: list[float] = []
    try:
        for number in range(turns):
            model.queue(Reply.call("lookup", {"q": str(number)}), Reply.say(f"answer {number}"))
            replies_before = len(model.last_byte_at)
            requests_before = len(model.requests)
            message = {
                "type": "agent.session.input.message",
                "input": [{"role": "user", "content": [{"type": "input_text", "text": "go"}]}],
            }
            post(poster, path, {"events": [message]})
            deadline = time.monotonic() + bench.TURN_DEADLINE_SECONDS
            while True:
                event_type, data = stream.next(deadline)
                item: Any = data.get("item") or {}
                if event_type == "agent.session.turn.item.added" and item.get("type") == (
                    "function_call"
                ):
                    seen = time.perf_counter()
                    out.append(seen - model.last_byte_at[replies_before])
                    result = {
                        "type": "agent.session.input.tool_result",
                        "turn_id": data["turn_id"],
                        "call_id": item["call_id"],
                        "success": True,
                        "output": "42",
                    }
                    sent = post(poster, path, {"events": [result]})
                elif (
                    event_type == "agent.session.turn.item.done"
                    and item.get("type") == "message"
                    and item.get("role") == "assistant"
                    and item.get("phase") == "final_answer"
                ):
                    seen = time.perf_counter()
                    out.append(seen - model.last_byte_at[replies_before + 1])
                    back.append(model.requests[requests_before + 1].received_at - sent)
                elif event_type in ("agent.session.turn.failed", "agent.session.failed"):
                    raise bench.BenchError(f"turn {number} failed: {json.dumps(data)[:300]}")
                elif event_type == "agent.session.idle" and len(back) == number + 1:
                    break
    finally:
        poster.close()
        stream.close()
    return {"model -> client": out, "client -> model": back}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50, help="tool round trips to time")
    parser.add_argument("--protocol", default="chat_completions")
    args = parser.parse_args()
    argv, env, label = bench.command()
    try:
        with (
            ModelServer().running() as model,
            tempfile.TemporaryDirectory(prefix="corebox-bench-") as workdir,
            bench.serve(argv, env, Path(workdir)) as (server, _),
        ):
            figures = round_trips(server.port, model, args.turns, args.protocol)
    except bench.BenchError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 1
    print(f"builtin harness overhead per model round trip ({label}, {args.protocol})")
    print(f"{'path':<18} {'n':>4} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for name, values in figures.items():
        ms = [v * 1000 for v in values]
        print(
            f"{name:<18} {len(ms):>4} {statistics.median(ms):>8.2f} "
            f"{bench.percentile(ms, 0.95):>8.2f} {max(ms):>8.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
