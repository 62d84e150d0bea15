"""Subagents: what a harness reports about the subagents it runs inside a session
(seed 000's subagent observation frames), projected into rows and journal events, and
the public views the `sessions.subagents.*` routes answer.

- `projection.py`: applies one observation frame inside the Run's fenced transaction.
- `views.py`: the public Subagent, its turns and items.
- `forking.py`: what a fork carries of them (copies of the subagents its items opened).

May import `allinone.core.errors`, `allinone.core.ids`, `allinone.core.recorder`,
`runtime.proto` and `storage`; never the HTTP layer.
"""
