"""The console: static HTML, CSS and JavaScript modules served by Core at `/`.

Everything the page needs is in `static/` (no build step, no file fetched from any other
origin). `allinone.core.api.console` serves these files; the page reads the same public
API and event streams as any client, with a key it holds in memory only.

`command.py` is the `corebox console` command (where the console is, and opening it).
"""
