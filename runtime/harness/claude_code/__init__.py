"""The `claude_code` harness: an installed Claude Code CLI, driven through its streaming
JSON mode (`claude -p --input-format stream-json --output-format stream-json`).

adapter.py   the HarnessAdapter: declaration, availability, Executor creation
cli.py       finding the CLI, its version, the command line and environment of a process
process.py   one CLI process: JSON lines in and out, the control protocol
turn.py      one turn: CLI messages -> frames, permission prompts -> approvals
executor.py  the Executor (one per session): the process and the native session id
errors.py    API failures the CLI reports -> engine failure codes
"""
