"""The two scenario runners never import each other's implementation (seed 000): the
Core side uses only `runtime.proto` from the Runtime, the Runtime side nothing of Core."""

from __future__ import annotations

import ast
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _imports(module: str, seen: set[str] | None = None) -> set[str]:
    """Every module `tests.contract.<module>` imports, following tests.contract imports."""
    seen = set() if seen is None else seen
    if module in seen:
        return set()
    seen.add(module)
    tree = ast.parse((HERE / f"{module}.py").read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    for name in list(found):
        if name.startswith("tests.contract."):
            found |= _imports(name.removeprefix("tests.contract."), seen)
    return found


def test_core_side_uses_only_the_protocol_of_the_runtime() -> None:
    for name in _imports("test_core_side"):
        if name.startswith("runtime"):
            assert name.startswith("runtime.proto"), name


def test_runtime_side_never_imports_core() -> None:
    for name in _imports("test_runtime_side"):
        assert not name.startswith(("allinone", "storage")), name


def test_remote_runtime_client_speaks_only_json() -> None:
    for name in _imports("test_remote_runtime"):
        assert not name.startswith(("allinone", "runtime", "storage")), name
