"""Confined commands: what a command the Runtime runs for a workspace may touch.

A confined command may read, write and create anything inside its workspace and a
private temporary directory, and only read and execute the system directories (`/usr`,
`/lib*`, `/bin`, `/sbin`, `/etc`, `/opt`, the Python prefixes), plus `/dev/null` and the
random devices. Nothing else of the host is reachable, in particular not the data
directory the Runtime is told to deny: a system directory that contains a denied path is
left out of the read-only set.

Mechanisms, best first, all without privileges:

    landlock      Linux Landlock, applied through direct system calls by a tiny launcher
                  that restricts itself, sets no_new_privs, then execs the command
                  (`python -m runtime.confinement` from source; the frozen binary's
                  hidden `__confine` argument). Threads in the Runtime are never touched.
    bubblewrap    `bwrap` with the same directories bound, when Landlock is unavailable.
    none          no confinement; whether a command may still run is the caller's policy.

`probe()` finds the mechanism in force once; `Sandbox.wrap()` turns a command's argv into
the argv that runs it confined. `launch()` is the launcher's body.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from runtime.errors import RuntimeFault

LANDLOCK = "landlock"
BUBBLEWRAP = "bubblewrap"
NONE = "none"
LAUNCHER_ARGUMENT = "__confine"

_SYS_CREATE_RULESET = 444
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# Filesystem access rights by the ABI that introduced them.
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_ABI1_RIGHTS = (1 << 13) - 1
_REFER, _TRUNCATE, _IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_READ_ONLY = _EXECUTE | _READ_FILE | _READ_DIR
# ABI 6: no signals to, and no abstract UNIX sockets of, processes outside the sandbox
# (the Runtime itself, other commands).
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1
# ABI 4: TCP bind and connect (handled with no port allowed: no TCP at all).
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_FILE_RIGHTS = _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE | _IOCTL_DEV

SYSTEM_DIRECTORIES = (
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/bin",
    "/sbin",
    "/etc",
    "/opt",
)
DEVICE_FILES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")


# The Runtime's own environment variables a command inherits: nothing else of it (its
# keys and settings) ever reaches a command.
INHERITED_VARIABLES = ("PATH", "LANG", "LANGUAGE", "TZ", "TERM", "USER", "LOGNAME")


def inherited(environ: Mapping[str, str]) -> dict[str, str]:
    """The part of the Runtime's environment a command may see (locale and PATH)."""
    return {
        name: value
        for name, value in environ.items()
        if name in INHERITED_VARIABLES or name.startswith("LC_")
    }


class ConfinementError(RuntimeFault):
    """The confinement cannot be applied; the command must not run."""


@dataclass(frozen=True)
class Confinement:
    """The mechanism in force: `kind` is landlock, bubblewrap or none; `abi` the Landlock
    ABI version (0 otherwise)."""

    kind: str
    abi: int = 0

    @property
    def confined(self) -> bool:
        return self.kind != NONE

    def describe(self) -> dict[str, str | int]:
        if self.kind == LANDLOCK:
            return {"kind": self.kind, "abi": self.abi}
        return {"kind": self.kind}


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, or 0 when Landlock is unavailable."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return 0
    libc.syscall.restype = ctypes.c_long
    version = int(
        libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION)
    )
    return max(version, 0)


def probe() -> Confinement:
    """The best confinement this host offers without privileges."""
    abi = landlock_abi()
    if abi > 0:
        return Confinement(LANDLOCK, abi)
    if shutil.which("bwrap") is not None:
        return Confinement(BUBBLEWRAP)
    return Confinement(NONE)


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


@dataclass(frozen=True)
class Rules:
    """What a confined command may reach: `writable` directories (full access),
    `readable` directories (read and execute), `devices` (read and write files), and
    the network unless `network` is False (then no TCP under Landlock ABI 4 and later,
    no network namespace under bubblewrap; older Landlock cannot take it away)."""

    writable: tuple[str, ...]
    readable: tuple[str, ...]
    devices: tuple[str, ...]
    network: bool = True

    def encode(self) -> str:
        return json.dumps(
            {
                "writable": self.writable,
                "readable": self.readable,
                "devices": self.devices,
                "network": self.network,
            }
        )

    @classmethod
    def decode(cls, text: str) -> Rules:
        data = json.loads(text)
        return cls(
            tuple(data["writable"]),
            tuple(data["readable"]),
            tuple(data["devices"]),
            bool(data.get("network", True)),
        )


class Sandbox:
    """Wraps commands for one Runtime: the mechanism in force, the paths it denies, and
    whether a command may run when nothing confines it (`unconfined_allowed`: the
    Runtime's owner decides; Core decides per project for its in-process Runtime)."""

    def __init__(
        self,
        confinement: Confinement,
        denied: Sequence[Path] = (),
        unconfined_allowed: bool = False,
        network: bool = True,
    ) -> None:
        self.confinement = confinement
        self.unconfined_allowed = unconfined_allowed
        self.network = network
        self._denied = tuple(Path(os.path.realpath(p)) for p in denied)

    def without_network(self) -> Sandbox:
        """This sandbox, its commands also cut off from the network where the mechanism
        in force can do it (an `egress: loopback_only` safety overlay)."""
        return Sandbox(self.confinement, self._denied, self.unconfined_allowed, network=False)

    @contextlib.contextmanager
    def command(
        self, argv: Sequence[str], workspace: Path, env: Mapping[str, str]
    ) -> Iterator[tuple[list[str], dict[str, str]]]:
        """The confined argv and environment for one command, with a private temporary
        directory (also its HOME) removed when the block ends. Raises ConfinementError,
        before anything runs, when nothing confines and unconfined commands are refused."""
        if not self.confinement.confined and not self.unconfined_allowed:
            raise ConfinementError(
                "commands are refused: this host offers no confinement (Landlock or"
                " bubblewrap) and the owner has not trusted this project"
            )
        private = Path(tempfile.mkdtemp(prefix="corebox-command-"))
        try:
            wrapped = self.wrap(argv, workspace, private)
            yield wrapped, {**env, "TMPDIR": str(private), "HOME": str(private)}
        finally:
            shutil.rmtree(private, ignore_errors=True)

    def rules(self, workspace: Path, private_tmp: Path) -> Rules:
        candidates = [*SYSTEM_DIRECTORIES, sys.prefix, sys.base_prefix, sys.exec_prefix]
        readable: list[str] = []
        for candidate in candidates:
            real = Path(os.path.realpath(candidate))
            if not real.is_dir() or str(real) in readable:
                continue
            if any(_within(denied, real) or _within(real, denied) for denied in self._denied):
                continue  # never grant a directory that holds (or is) a denied path
            readable.append(str(real))
        devices = tuple(d for d in DEVICE_FILES if os.path.exists(d))
        return Rules((str(workspace), str(private_tmp)), tuple(readable), devices, self.network)

    def wrap(self, argv: Sequence[str], workspace: Path, private_tmp: Path) -> list[str]:
        """The argv that runs `argv` confined to `workspace` (read-write), `private_tmp`
        and the read-only system directories; `argv` itself when nothing confines."""
        rules = self.rules(workspace, private_tmp)
        if self.confinement.kind == LANDLOCK:
            return [*launcher(), rules.encode(), "--", *argv]
        if self.confinement.kind == BUBBLEWRAP:
            return _bubblewrap(rules, workspace, argv)
        return list(argv)


def launcher() -> list[str]:
    """How to start the launcher: the frozen binary with its hidden argument, or this
    Python running this module from the source tree it was loaded from."""
    if getattr(sys, "frozen", False):
        return [sys.executable, LAUNCHER_ARGUMENT]
    source = str(Path(__file__).resolve().parent.parent)
    boot = (
        f"import sys; sys.path.insert(0, {source!r}); "
        "from runtime.confinement import launch; sys.exit(launch(sys.argv[1:]))"
    )
    return [sys.executable, "-s", "-c", boot]


def _bubblewrap(rules: Rules, workspace: Path, argv: Sequence[str]) -> list[str]:
    """A new mount namespace holding only the rules' directories (system ones read-only),
    a private /dev and /proc, and the system directories that are symlinks (`/bin` ->
    `usr/bin` on merged-/usr systems) as the same symlinks."""
    command = [
        "bwrap", "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc",
        "--dev", "/dev", "--proc", "/proc",
    ]  # fmt: skip
    if not rules.network:
        command.append("--unshare-net")
    for directory in rules.readable:
        command += ["--ro-bind", directory, directory]
    for directory in rules.writable:
        command += ["--bind", directory, directory]
    for name in SYSTEM_DIRECTORIES:
        if os.path.islink(name) and os.path.realpath(name) in rules.readable:
            command += ["--symlink", os.readlink(name), name]
    return [*command, "--chdir", str(workspace), "--", *argv]


def _syscall(number: int, *args: object) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    result = int(libc.syscall(number, *args))
    if result < 0:
        raise ConfinementError(os.strerror(ctypes.get_errno()))
    return result


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def handled_rights(abi: int) -> int:
    rights = _ABI1_RIGHTS
    if abi >= 2:
        rights |= _REFER
    if abi >= 3:
        rights |= _TRUNCATE
    if abi >= 5:
        rights |= _IOCTL_DEV
    return rights


def restrict_self(rules: Rules) -> None:
    """Apply Landlock to this process (and what it execs): raise ConfinementError if the
    kernel refuses any step, so the command is never run unconfined."""
    abi = landlock_abi()
    if abi <= 0:
        raise ConfinementError("Landlock is unavailable")
    handled = handled_rights(abi)
    net = 0 if rules.network or abi < 4 else _NET_BIND_TCP | _NET_CONNECT_TCP
    if abi >= 6:
        attr = _RulesetAttr(handled, net, _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL)
        size = ctypes.sizeof(_RulesetAttr)
    elif abi >= 4:
        attr = _RulesetAttr(handled, net, 0)
        size = 2 * ctypes.sizeof(ctypes.c_uint64)  # ABI 4 and 5 know the first two fields
    else:
        attr = _RulesetAttr(handled, 0, 0)
        size = ctypes.sizeof(ctypes.c_uint64)  # kernels before ABI 4 know only this field
    ruleset = _syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), size, 0)
    try:
        for directory in rules.writable:
            _add_rule(ruleset, directory, handled)
        for directory in rules.readable:
            _add_rule(ruleset, directory, _READ_ONLY & handled)
        for device in rules.devices:
            _add_rule(ruleset, device, (_READ_FILE | _WRITE_FILE | _TRUNCATE) & handled)
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise ConfinementError("no_new_privs refused")
        _syscall(_SYS_RESTRICT_SELF, ruleset, 0)
    finally:
        os.close(ruleset)


def _add_rule(ruleset: int, path: str, rights: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        if not os.path.isdir(path):
            rights &= _FILE_RIGHTS
        attr = _PathBeneathAttr(rights, fd)
        _syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(attr), 0)
    finally:
        os.close(fd)


def unbundled(environ: Mapping[str, str], frozen: bool) -> dict[str, str]:
    """`environ` without what the one-file binary's loader (`frozen`) added for its own
    Python when it started the launcher: its `_PYI_`/`_MEI` bookkeeping, and its unpacked
    libraries in `LD_LIBRARY_PATH`, which a command would load in place of the system's.
    The loader keeps a value it replaced as `LD_LIBRARY_PATH_ORIG`; that one is put back."""
    if not frozen:
        return dict(environ)
    env = {n: v for n, v in environ.items() if not n.startswith(("_PYI_", "_MEI"))}
    original = env.pop("LD_LIBRARY_PATH_ORIG", None)
    env.pop("LD_LIBRARY_PATH", None)
    if original is not None:
        env["LD_LIBRARY_PATH"] = original
    return env


def launch(arguments: Sequence[str]) -> int:
    """The launcher: `RULES_JSON -- ARGV...`. Restricts itself, then execs ARGV; returns
    (exit status 126/127) only when it cannot."""
    if len(arguments) < 3 or arguments[1] != "--":
        print("corebox: confine: usage: RULES -- COMMAND...", file=sys.stderr)
        return 126
    try:
        restrict_self(Rules.decode(arguments[0]))
    except (ConfinementError, OSError, ValueError, KeyError) as exc:
        print(f"corebox: confine: cannot confine the command ({exc})", file=sys.stderr)
        return 126
    command = list(arguments[2:])
    # Python ignores SIGPIPE and SIGXFSZ for itself, and an ignored signal stays ignored
    # across exec: a command gets the defaults every program expects (`yes | head` ends
    # `yes` quietly instead of making it print "Broken pipe" errors).
    for number in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(number, signal.SIG_DFL)
    try:
        os.execvpe(command[0], command, unbundled(os.environ, getattr(sys, "frozen", False)))
    except OSError as exc:
        print(f"corebox: confine: {command[0]}: {exc.strerror}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(launch(sys.argv[1:]))
