"""Run control (seed 003 control plane): commands as resources (pause, resume, cancel),
what a command does to a turn no Run holds (suspended or paused), and drain.

- `suspended.py`: ending or moving a turn that no Run holds (phase `resuming` or
  `paused`) directly in the database.
- `commands.py`: `Commands`, the one entry point the API and the CLI reach; each command
  is checked and written in one transaction, then signalled to the orchestrator.

May import: the domain (`allinone.core.*` except `api`), `allinone.core.errors` and
`storage` repositories. Nothing here speaks HTTP; orchestration is reached only through
the signals passed in by the composition root.
"""
