"""DESIGN.md section 3: the dependency rules between the top-level packages."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def modules(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def test_runtime_never_imports_core_or_storage() -> None:
    for path in modules("runtime"):
        for name in imports_of(path):
            assert not name.startswith(("allinone", "storage")), f"{path}: imports {name}"


def test_proto_imports_only_stdlib_and_msgspec() -> None:
    for path in modules("runtime/proto"):
        for name in imports_of(path):
            top = name.split(".")[0]
            assert top in {"msgspec", "runtime", "__future__"} or _stdlib(top), (
                f"{path}: imports {name}"
            )
            if top == "runtime":
                assert name.startswith("runtime.proto"), f"{path}: imports {name}"


def test_storage_never_imports_core_or_runtime() -> None:
    for path in modules("storage"):
        for name in imports_of(path):
            assert not name.startswith(("allinone", "runtime")), f"{path}: imports {name}"


def test_storage_imports_only_stdlib_aiosqlite_and_msgspec() -> None:
    for path in modules("storage"):
        for name in imports_of(path):
            top = name.split(".")[0]
            assert top in {"aiosqlite", "msgspec", "storage", "__future__"} or _stdlib(top), (
                f"{path}: imports {name}"
            )


def test_the_receiver_is_a_remote_client_of_core() -> None:
    for path in modules("allinone/receiver"):
        for name in imports_of(path):
            assert not name.startswith(("allinone.core", "runtime", "storage")), (
                f"{path}: imports {name}"
            )
            if name.startswith("allinone"):
                assert name.startswith("allinone.receiver"), f"{path}: imports {name}"


def test_every_package_says_what_lives_there_and_what_it_may_import() -> None:
    for package in ("allinone", "allinone/core", "allinone/receiver", "storage"):
        docstring = ast.get_docstring(ast.parse((ROOT / package / "__init__.py").read_text()))
        assert docstring is not None, package
        assert "import" in docstring, f"{package}/__init__.py does not state what it may import"


def test_core_imports_only_the_protocol_of_the_runtime() -> None:
    for path in modules("allinone/core"):
        for name in imports_of(path):
            if name.startswith("runtime"):
                assert name.startswith("runtime.proto"), f"{path}: imports {name}"


def test_only_the_composition_root_wires_the_runtime_in() -> None:
    for path in modules("allinone"):
        if path.name == "app.py" and path.parent.name == "allinone":
            continue
        for name in imports_of(path):
            if name.startswith("runtime") and not name.startswith("runtime.proto"):
                raise AssertionError(f"{path}: imports {name}")


def test_top_level_stays_as_designed() -> None:
    allowed = {
        "pyproject.toml",
        "allinone",
        "runtime",
        "storage",
        "build",
        "tests",
        "examples",
        "README.md",
        "Makefile",
        ".ci",
        ".gitignore",
        ".git",
    }
    tracked = {p.name for p in ROOT.iterdir()}
    ignored = {".venv", "dist", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
    extra = {name for name in tracked - allowed - ignored if not name.endswith(".egg-info")}
    assert not extra, f"unexpected top-level entries: {sorted(extra)}"


def _stdlib(name: str) -> bool:
    import sys

    return name in sys.stdlib_module_names
