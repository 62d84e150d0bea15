"""A function tool answered by the client through the SDK's tool_handlers.

COREBOX_API_KEY=<key> python examples/function_tools.py
"""

from __future__ import annotations

import os
import sys
from typing import Any

from openai import OpenAI

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
}


def get_weather(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"city": arguments["city"], "forecast": "sunny", "temp_c": 21}


def main() -> int:
    key = os.environ.get("COREBOX_API_KEY")
    if not key:
        print("set COREBOX_API_KEY to the key corebox printed at first start", file=sys.stderr)
        return 2
    client = OpenAI(
        base_url=os.environ.get("COREBOX_BASE_URL", "http://127.0.0.1:8800/v1"), api_key=key
    )
    agent = client.beta.agents.create(model="scripted", name="weather", tools=[WEATHER])  # type: ignore[list-item]
    created = list(
        client.beta.agents.sessions.create(
            agent_id=agent.id, environment={"type": "none"}, input="ready", stream=True
        )
    )
    session_id = created[0].session.id  # type: ignore[attr-defined]
    with client.beta.agents.sessions.stream(
        session_id,
        input='/call get_weather {"city": "Paris"}\n/say Paris: {result}',
        tool_handlers={"get_weather": get_weather},
    ) as stream:
        print(stream.get_final_result().output_text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
