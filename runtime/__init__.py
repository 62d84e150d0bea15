"""The Runtime daemon: it connects to Core over one WebSocket and runs agent harnesses.

What lives here, by layer (a module imports from its own layer or those above, never below):

    proto/          the wire protocol shared with Core, sans-I/O (see its docstring)
    errors.py       the Runtime's exception tree, drawn in its docstring
    confinement.py, workspaces.py, suspension.py, timers.py, tasks.py
                    the sandbox, bound workspaces, quiesced Environments, deadlines
                    and stopping tasks
    harness/        the adapter interface, the registry and the adapters
    runs.py         one Run: a Turn driven through an Executor, its frames and receipts
    admission.py, executors.py, preparations.py, operations.py
                    admission records, the Executor pool, prepare/start/release, and
                    workspace reads, writes, exports and initialization
    dispatcher.py   one handler per Core -> Runtime message type; the one place
                    replies are sent
    coalesce.py     a transport view writing one loop step's frames in one socket
                    write (the composition root gives it to Core's WebSocket protocol too)
    transport.py, daemon.py
                    the WebSocket: bootstrap, reconnect, heartbeats and the receive loop

It may import the standard library, its declared dependencies (websockets, msgspec,
openai, mcp and its httpx2) and `runtime.*`; never `allinone` or `storage`: Core and the
Runtime meet only on the wire, so either side can be replaced by a peer that speaks the
protocol. `tests/runtime/test_layout.py` holds these rules.
"""
