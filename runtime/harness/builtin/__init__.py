"""The `builtin` harness: a Python model/tool loop through the official `openai` package.

adapter.py        the HarnessAdapter and its Executor (one per session)
turn.py           the model/tool loop of one turn
model.py          the neutral model-call events and the protocol interface
chat.py           the chat_completions protocol
responses.py      the responses protocol
conversation.py   the session's conversation, kept in the Executor
tools.py          function tools and MCP tools offered to the model
mcp_servers.py    HTTP MCP servers through the official `mcp` package
errors.py         provider errors -> engine failure codes
"""
