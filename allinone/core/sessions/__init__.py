"""Sessions and their inputs: how a request becomes durable state.

- `admission.Admission`: the one entry point the API and automations call; it composes
  the parts below and tells the orchestrator (through callbacks) what to do after a
  commit.
- `creation`: a new session (agent, execution settings, first turn).
- `hosted`: checking and binding a session's hosted or self-hosted environment.
- `inputs`: an `InputBatch` of input events admitted in one transaction, one `match`
  over the event kinds (message, cancel, tool result, permission, choice).
- `writer`: the rows and journal events every admission writes (turns, inputs, items).
- `idempotency`: request digests and the replay rule for idempotency keys.
- `changes`: session update and delete.

Every admission runs in one transaction: the rows it creates and the journal events that
describe them commit together, and the caller is answered only after that commit. A
rejected request writes nothing.

May import: the domain (`allinone.core.*` except `api`), `allinone.core.shapes`,
`allinone.core.errors`, and `storage` repositories. SQL lives in `storage/`.
"""
