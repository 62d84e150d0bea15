"""Harness adapters: the interface (`base`), the registry and the adapters themselves
(`scripted` for tests and scenarios, `builtin` for the model/tool loop).

An adapter sees a Turn only through `base.RunContext` and reports failures as
`base.HarnessError`s; it never sees the socket, the dispatcher or admission. It may
import the standard library, its own dependencies (openai, mcp, httpx2), `runtime.proto`,
`runtime.errors`, `runtime.confinement` and `runtime.workspaces`; never the dispatcher,
the transport or Core.
"""
