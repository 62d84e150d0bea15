"""Core: the public API, the Runtime gateway, orchestration and durable state.

The rooms, and what each may import (arrows point at what a room may use):

    api/            HTTP only: routes, request and response types, the error format,
      |             SSE. The one package that speaks HTTP; it maps domain errors once.
      v
    sessions, agents, environments, automations, vaults, tools, features ...
      |             the domain (today flat modules here, growing into rooms): rules,
      |             transactions and the SQL they need, raised as domain errors
      v
    orchestration/  turn queue, claim and fencing, per-turn state machine, delivery,
      |             projection of Run frames into items and journal events
      v
    gateway/        Runtime connections: bootstrap, the WebSocket shell, routing
      |
      v
    storage (package `storage`) and the wire protocol (`runtime.proto`)

    comms/          seed 002, a room of its own with its own error tree and one adapter
                    to HTTP (`comms.api.to_api_error`); storage behind functions

Small shared modules sit here beside the rooms: `ids.py` (clock and ID generation,
injectable), `states.py` (lifecycle enums and their allowed transitions), `hub.py`
(journal wake-ups), `recorder.py`, `sealing.py` (secrets at rest), `tasks.py` (stopping a
child task without losing the caller's cancellation), `health.py`.

Rules: nothing here imports `allinone.app`, `allinone.cli` or the Runtime's
implementation (only `runtime.proto`); nothing outside `api/` imports `core.api`;
nothing here reads configuration from the environment or starts a task it does not own
and stop. Collaborators arrive through constructors from `allinone/app.py`.
"""
