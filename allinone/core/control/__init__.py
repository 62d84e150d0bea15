"""Control of sessions and their runs: fork and rewind (seed 003).

May import the storage repositories, `allinone.core` domain modules (errors, ids,
render, recorder) and `runtime.proto`; never the HTTP layer (`api/` adapts it).
"""
