"""A function tool answered by the client through the SDK's tool_handlers.

.venv/bin/python examples/function_tools.py
"""

from __future__ import annotations

import sys
from typing import Any

import connection

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
    client = connection.client()
    if client is None:
        return 2
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
    sys.exit(connection.run(main))
