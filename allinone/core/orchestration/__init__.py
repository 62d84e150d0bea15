"""Orchestration: the life of a turn after admission (DESIGN.md section 4).

What lives here:

- `orchestrator.py`: the turn queue; selects a device and owns each turn's task.
- `turn.py`: one turn's execution: Environment readiness, preparation, the claim
  (compare-and-set with a worker epoch, fencing token and lease), the start.
- `observation.py`: a started Run observed until it settles: projection batches, lease
  renewal, cancellation and its confirmation, every lost-observation failure.
- `delivery.py`: a running turn's client inputs (steering, function results,
  decisions) delivered with receipts.
- `projector.py`: Run frames into items and journal events, fenced.
- `outcomes.py`: how turns end (settlement, failures, lease expiry, interruption).
- `recovery.py`: a turn whose Run is gone (a restart, a lost Runtime): continued from
  its checkpoint by a re-claim when nothing was in flight, failed naming the operation
  otherwise.
- `pausing.py`: a pause (or a drain) of an observed Run at its next checkpoint.
- `transitions.py`: every turn status move, checked against the one transition table.
- `configuration.py`: pure mappings from a session to what the wire needs (required
  capabilities, the `execution_prepare` configuration).
- `credentials.py`: the secrets one execution carries, resolved just before preparing.
- `timers.py`: the protocol timers; `collaborators.py`: what every turn uses.

What it may import: the standard library and msgspec; `runtime.proto` (never the
Runtime's implementation); `storage` (rows, transactions and SQL live there, never
here); and from Core: `gateway` (connections, subscriptions, the preparation and
workspace clients), `states`, `recorder`, `ids`, `render`, `environments`,
`sessions.revisions` (the configuration a turn is pinned to) and the secret stores
credentials need. It never imports `allinone.core.api`: nothing here
speaks HTTP, and API handlers reach it only through the signals the orchestrator
exposes (`wake`, `request_cancel`, `request_pause`, `input_admitted`, `abandon`,
`start_drain`).
"""
