"""corebox: the Agents API on your own machine, in one file.

What lives here: the product around Core and the Runtime. `cli.py` (the only place that
parses arguments and exits), `config.py` (flags, file and environment resolved once, at
start), `app.py` (the composition root: the one place that builds storage, Core, the
scheduler, the uvicorn server and the in-process Runtime, and starts and stops them),
`lifecycle.py` (ordered start-up, reverse shutdown within one budget),
`credentials.py` and `devices.py` (first-start keys and device credentials),
`redaction.py` (secrets kept out of the log), `admin.py`, and the packages `core/`
(the platform) and `receiver/` (a remote client of it).

May import: everything below it (`allinone.core`, `runtime.proto`, `storage`). Only
`app.py` imports the Runtime's implementation (`runtime` outside `runtime.proto`); the
rest of the package reaches the Runtime over the wire protocol. Nothing below the CLI
reads the environment at import time or calls `sys.exit`.
"""

__version__ = "0.1.0"
