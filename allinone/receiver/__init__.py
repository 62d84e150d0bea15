"""The reference receiver of protocol 1.4 (`corebox receiver
once|status|run|resolve|jobs|check`), the owner's comms commands (`corebox comms ...`)
and the agent handler
(`corebox handler agent`). Everything here is a remote client: it talks HTTP to a
platform's `/api/v1` (or `/core/v1/comms` for the owner) and imports nothing of Core.

May import: the standard library, msgspec, openai (the agent handler) and its own
modules; never `allinone.core`, `runtime` or `storage` (it keeps a small SQLite store of
its own through sqlite3, translated in `errors.py`). A layout test checks this.

Exception tree (errors.py):

    ReceiverError                 anything the receiver cannot do; the CLI prints it
    +-- ConfigError               the configuration is unusable or not private: refuse
    +-- LockHeld                  another receiver process holds the store's lock
    +-- StoreError                the local SQLite store failed (sqlite3 translated)
    +-- ResolutionError           a resolution.json is unusable
    +-- RemoteError               a call to the platform did not succeed
        +-- TransportError        no usable answer: network, timeout, redirect, not JSON
        +-- PlatformError         the platform answered with an error body (status, code)
    +-- Halted                    the cycle must stop until the owner looks: protocol
                                  mismatch, another role, a seq reused by another event

Adapter failures (timeout, crash, malformed output) are results, not exceptions:
adapters.Outcome carries a safe status code and the job or notification becomes
`uncertain`.
"""
