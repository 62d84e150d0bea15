"""A real headless Chromium driven over the DevTools protocol, for the console's tests.

`chromium(binary, workdir)` launches Debian's `chromium` with a fresh profile and the
switches that keep it from reaching any outside host, and attaches to one page over the
browser's DevTools WebSocket (the `websockets` sync client). Every request the page makes
is recorded from the Network domain (`Page.requests`). Waiting is done by the page itself:
`Page.wait_for(js)` resolves when a MutationObserver sees `js` become true (or fails at
its deadline), so tests synchronise on what the page shows, never on sleeps.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect

SWITCHES = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--metrics-recording-only",
    "--password-store=basic",
    "--remote-debugging-port=0",
)

# Resolves when `predicate` (a JS expression) is truthy: checked now and on every DOM
# change, rejected when `ms` pass first.
WAIT = """new Promise((resolve, reject) => {
  const check = () => { try { return (%s); } catch (e) { return false; } };
  const first = check();
  if (first) { resolve(first); return; }
  const observer = new MutationObserver(() => {
    const value = check();
    if (value) { observer.disconnect(); clearTimeout(timer); resolve(value); }
  });
  const all = {subtree: true, childList: true, characterData: true, attributes: true};
  observer.observe(document, all);
  const timeout = () => { observer.disconnect(); reject(new Error("timed out: " + %s)); };
  const timer = setTimeout(timeout, %d);
})"""


class BrowserError(Exception):
    """The browser answered a command with an error, or a page script threw."""


def find_binary() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def install() -> str | None:
    """Install Debian's chromium when this is a root shell with apt-get (as `make
    system-deps` does); the binary, or None when it cannot be installed here."""
    found = find_binary()
    if found or os.geteuid() != 0 or shutil.which("apt-get") is None:
        return found
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}

    def apt(*args: str) -> int:
        return subprocess.run(["apt-get", *args], env=env, capture_output=True).returncode

    if apt("install", "-y", "-qq", "chromium") != 0:
        apt("update", "-qq")
        apt("install", "-y", "-qq", "chromium")
    return find_binary()


@dataclass
class Page:
    """One browser tab: commands go to its DevTools session; its events are recorded."""

    socket: ClientConnection
    session_id: str
    requests: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def send(self, method: str, timeout: float = 30.0, **params: Any) -> dict[str, Any]:
        """Send one command and read until its answer, recording events meanwhile;
        `timeout` bounds the whole wait."""
        ident = next(self._ids)
        message = {"id": ident, "method": method, "params": params, "sessionId": self.session_id}
        self.socket.send(json.dumps(message))
        deadline = time.monotonic() + timeout
        while True:
            reply = self._next(deadline, f"{method} had no answer within {timeout} s")
            if reply.get("id") == ident:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            self._record(reply)

    def _next(self, deadline: float, late: str) -> dict[str, Any]:
        """The next message from the browser, or TimeoutError(`late`) at `deadline`."""
        try:
            message: dict[str, Any] = json.loads(
                self.socket.recv(timeout=max(0.0, deadline - time.monotonic()))
            )
        except TimeoutError:
            raise TimeoutError(late) from None
        return message

    def _record(self, event: dict[str, Any]) -> None:
        method, params = event.get("method"), event.get("params", {})
        if method == "Network.requestWillBeSent":
            self.requests.append(params["request"]["url"])
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            self.exceptions.append(str(details.get("exception", {}).get("description", details)))

    def evaluate(self, expression: str, timeout: float = 30.0) -> Any:
        """The value of `expression` (awaited when it is a promise)."""
        result = self.send(
            "Runtime.evaluate",
            timeout=timeout,
            expression=expression,
            awaitPromise=True,
            returnByValue=True,
        )
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise BrowserError(details.get("exception", {}).get("description", str(details)))
        return result["result"].get("value")

    def wait_for(self, predicate: str, ms: int = 10_000) -> Any:
        """Wait until the JS expression `predicate` is truthy in the page; its value."""
        script = WAIT % (predicate, json.dumps(predicate), ms)
        return self.evaluate(script, timeout=ms / 1000 + 10)

    def wait_event(self, method: str, timeout: float = 30.0, **match: Any) -> dict[str, Any]:
        """Read events until one named `method` whose params hold `match`; its params.
        `timeout` bounds the whole wait, however many other events arrive meanwhile."""
        deadline = time.monotonic() + timeout
        while True:
            event = self._next(deadline, f"no {method} {match or ''} within {timeout} s")
            self._record(event)
            params: dict[str, Any] = event.get("params", {})
            if event.get("method") == method and all(params.get(k) == v for k, v in match.items()):
                return params

    def navigate(self, url: str, timeout: float = 30.0) -> None:
        """Load `url` and return once the page's load event has fired."""
        self.send("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired", timeout)

    def click(self, selector: str) -> None:
        """A real mouse click (pressed, released) at the centre of `selector`'s element."""
        box = self.wait_for(
            f"""(() => {{ const el = document.querySelector({json.dumps(selector)});
            if (!el || el.disabled) return null; el.scrollIntoView({{block: 'center'}});
            const r = el.getBoundingClientRect(); if (!r.width || !r.height) return null;
            return {{x: r.x + r.width / 2, y: r.y + r.height / 2}}; }})()"""
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.send(
                "Input.dispatchMouseEvent",
                type=kind,
                x=box["x"],
                y=box["y"],
                button="left",
                clickCount=1,
            )

    def type_into(self, selector: str, text: str) -> None:
        self.evaluate(f"document.querySelector({json.dumps(selector)}).focus()")
        self.send("Input.insertText", text=text)

    def resize(self, width: int, height: int, mobile: bool = False) -> None:
        self.send(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=mobile,
        )

    def screenshot(self, path: Path) -> None:
        data = self.send("Page.captureScreenshot", format="png")["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))

    def storage(self) -> dict[str, Any]:
        """Everything the page could keep: cookies, localStorage, sessionStorage."""
        cookies = self.send("Network.getAllCookies")["cookies"]
        kept = self.evaluate(
            "({local: JSON.stringify({...localStorage}),"
            " session: JSON.stringify({...sessionStorage}), cookie: document.cookie})"
        )
        return {"cookies": cookies, **kept}


@contextmanager
def chromium(binary: str, workdir: Path) -> Iterator[Page]:
    """A headless Chromium with a fresh profile in `workdir`, and one attached tab;
    the browser is stopped when the block ends."""
    profile = workdir / "profile"
    profile.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(
        [binary, *SWITCHES, f"--user-data-dir={profile}", "about:blank"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    drain: threading.Thread | None = None
    try:
        url = _devtools_url(process)
        # Keep reading what it prints, so a full pipe never blocks the browser.
        drain = threading.Thread(target=_drain, args=(process,), daemon=True)
        drain.start()
        with connect(url, max_size=64 * 1024 * 1024, open_timeout=30) as socket:
            yield _attach(socket)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        if drain is not None:
            drain.join(10)
        process.stderr.close()


def _devtools_url(process: subprocess.Popen[bytes]) -> str:
    """The browser's DevTools address, from the line Chromium prints when it listens."""
    assert process.stderr is not None
    for raw in process.stderr:
        line = raw.decode(errors="replace").strip()
        if line.startswith("DevTools listening on "):
            return line.removeprefix("DevTools listening on ")
    raise BrowserError(f"chromium exited ({process.wait()}) before it listened")


def _drain(process: subprocess.Popen[bytes]) -> None:
    assert process.stderr is not None
    for _ in process.stderr:
        pass


def _attach(socket: ClientConnection) -> Page:
    """Open a tab and attach to it with a flat session, its domains enabled."""
    counter = itertools.count(1)

    def browser(method: str, **params: Any) -> dict[str, Any]:
        ident = next(counter)
        socket.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            reply = json.loads(socket.recv(timeout=30))
            if reply.get("id") == ident:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply["result"]
                return result

    target = browser("Target.createTarget", url="about:blank")["targetId"]
    session = browser("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    page = Page(socket, session, _ids=itertools.count(1000))
    for domain in ("Page", "Runtime", "Network"):
        page.send(f"{domain}.enable")
    return page
