"""Several Core processes on one database.

- `membership.py`: this process's row and heartbeat, the Runtime connections it holds,
  peers found gone (their running turns recovered by the crash rules), and jobs that run
  once per slot across the processes.
- `signals.py`: wake-ups that cross processes (journal readers, the turn queue, a
  running turn's cancellation, pause or input): delivered in this process at once, and
  to the other processes through the database's notification channel when it has one.

Imports: `storage`, `allinone.core.ids`, `allinone.core.tasks`; psycopg only in the
PostgreSQL channel. Nothing here speaks HTTP.
"""
