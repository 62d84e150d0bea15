"""The Runtime gateway: Core's side of the wire.

    server.py         the bootstrap endpoint and the WebSocket endpoint (the I/O shell:
                      reads frames, writes the send queue, enforces deadlines)
    routing.py        frame -> destination, a pure function tested frame by frame
    connection.py     one Runtime connection: send queue, capability snapshot, and the
                      subscriptions `routing` delivers to
    subscriptions.py  buffered preparation and Run subscriptions
    registry.py       the connected devices and their capability snapshots
    preparations.py   the one client for prepare, start and release, shared by turns and
                      workspace operations
    workspace.py      workspace operations sent to a Runtime and their replies
    workspace_rules.py  their protocol rules, without I/O
    setup_progress.py how far an initialization is, reported before each step
    refusals.py       refused device credentials, logged at most once a minute per address

It may import the standard library, starlette, msgspec, `runtime.proto` (never the
Runtime daemon itself), `allinone.core.gateway.*` and the Core error tree
(`allinone.core.errors`), whose subtree its signals are; never `allinone.core.api`
(`server.py` answers the Runtime's HTTP in its own format). What a frame means for a Turn is
decided by orchestration, which imports the gateway, never the other way round.
"""
