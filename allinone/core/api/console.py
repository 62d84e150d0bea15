"""The console's static files: `GET /` (the page) and `GET /console/{name}` (its modules,
style sheet and images), read once from the `allinone.console` package.

The files carry no data and need no key. Every answer carries a Content-Security-Policy
that lets the page load and connect to its own origin only, so the browser itself refuses
any request to another host; the page is never framed and never cached stale.
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core.api.errors import not_found

PACKAGE = "allinone.console"
FOLDER = "static"
TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
HEADERS = {
    "content-security-policy": POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",
}


def _walk(folder: Traversable, prefix: str) -> dict[str, Traversable]:
    found: dict[str, Traversable] = {}
    for entry in folder.iterdir():
        if entry.is_dir():
            found.update(_walk(entry, f"{prefix}{entry.name}/"))
        elif "." + entry.name.rsplit(".", 1)[-1] in TYPES:
            found[prefix + entry.name] = entry
    return found


def load_files() -> dict[str, tuple[bytes, str]]:
    """Every servable file of the console, by its path under `static/`, with its type."""
    root = resources.files(PACKAGE).joinpath(FOLDER)
    return {
        name: (entry.read_bytes(), TYPES["." + name.rsplit(".", 1)[-1]])
        for name, entry in _walk(root, "").items()
    }


class ConsoleApi:
    """Serves the files `load_files` found when it was built; any other name is a 404."""

    def __init__(self) -> None:
        self._files = load_files()

    def routes(self) -> list[Route]:
        return [
            Route("/", self.index, methods=["GET"]),
            Route("/console/{name:path}", self.asset, methods=["GET"]),
        ]

    def _serve(self, name: str) -> Response:
        found = self._files.get(name)
        if found is None:
            raise not_found()
        body, media_type = found
        return Response(body, media_type=media_type, headers=HEADERS)

    async def index(self, request: Request) -> Response:
        return self._serve("index.html")

    async def asset(self, request: Request) -> Response:
        return self._serve(request.path_params["name"])
