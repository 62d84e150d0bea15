"""The `codex` harness: an installed Codex CLI driven through its app-server JSON-RPC
protocol (`codex app-server`, JSON lines over stdio).

cli.py        finding the CLI and the versions the adapter knows
rpc.py        the app-server process and its JSON-RPC connection
adapter.py    the HarnessAdapter and its declaration
executor.py   one session's Executor: the process, its thread, native resume
turn.py       one turn: app-server notifications and requests -> Run frames
errors.py     codexErrorInfo -> engine failure codes
"""
