"""Control of sessions and their runs (seed 003 control plane): commands as resources
(pause, resume, cancel), what a command does to a turn no Run holds (suspended or
paused), drain, and fork and rewind.

- `suspended.py`: ending or moving a turn that no Run holds (phase `resuming` or
  `paused`) directly in the database.
- `commands.py`: `Commands`, the one entry point the API and the CLI reach; each command
  is checked and written in one transaction, then signalled to the orchestrator.
- `kill_switch.py`: what a kill switch does to turns (cancel; pause, and resume the
  turns it paused when it is cleared with `resume`), as commands and inputs.
- `forks.py`, `rewinds.py`: a session copied at a turn into a new one, and turns hidden
  from the model's context.

May import: the domain (`allinone.core.*` except `api`), `allinone.core.errors`, storage
repositories and `runtime.proto`. Nothing here speaks HTTP; orchestration is reached only
through the signals passed in by the composition root.
"""
