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


# The PostgreSQL driver, and what must speak to PostgreSQL directly (its migrations, the
# copy from SQLite), are the only storage modules that may import psycopg.
PSYCOPG_MODULES = frozenset({"postgres.py", "migrations.py", "transfer.py"})


def test_storage_imports_only_stdlib_msgspec_and_psycopg_in_its_driver() -> None:
    for path in modules("storage"):
        for name in imports_of(path):
            top = name.split(".")[0]
            if top == "psycopg":
                assert path.name in PSYCOPG_MODULES, f"{path}: imports {name}"
                continue
            assert top in {"msgspec", "storage", "__future__"} or _stdlib(top), (
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


# Every module allowed to import the HTTP layer lives in `api/`: no exceptions.
HTTP_EDGES: set[str] = set()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def absolute_imports_of(source: str, module: str, is_package: bool) -> set[str]:
    """Every module `source` (the text of `module`) imports, relative imports resolved,
    `from a import b` counted as both `a` and `a.b` (b may be a module)."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            stem = ".".join([*base, *([node.module] if node.module else [])])
            found.add(stem)
            found.update(f"{stem}.{alias.name}" for alias in node.names)
    return found


def test_relative_imports_are_resolved() -> None:
    source = "from .api import errors\nfrom ..core import api\nimport allinone.core.api.x\n"
    found = absolute_imports_of(source, "allinone.core.sample", is_package=False)
    assert {"allinone.core.api.errors", "allinone.core.api", "allinone.core.api.x"} <= found
    found = absolute_imports_of("from . import api\n", "allinone.core", is_package=True)
    assert "allinone.core.api" in found


def test_the_domain_does_not_import_the_http_api() -> None:
    for path in modules("allinone/core"):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith("allinone/core/api/") or relative in HTTP_EDGES:
            continue
        source = path.read_text(encoding="utf-8")
        imported = absolute_imports_of(source, module_name(path), path.name == "__init__.py")
        for name in imported:
            assert name != "allinone.core.api" and not name.startswith("allinone.core.api."), (
                f"{relative}: imports {name}; raise allinone.core.errors instead"
            )


def _calls_to(path: Path, name: str) -> list[ast.Call]:
    calls = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if called == name:
                calls.append(node)
    return calls


def test_api_errors_are_built_only_by_the_one_mapping() -> None:
    home = ROOT / "allinone/core/api/errors.py"
    for path in modules("allinone"):
        if path != home:
            assert not _calls_to(path, "ApiError"), f"{path}: builds an ApiError itself"
        literals = {
            node.value
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
        }
        if path != home:
            assert "x-should-retry" not in literals, f"{path}: writes x-should-retry itself"


def test_each_api_error_kind_has_one_construction_site() -> None:
    tree = ast.parse((ROOT / "allinone/core/api/errors.py").read_text(encoding="utf-8"))
    owners: list[str] = []
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            calls = [n for n in ast.walk(function) if isinstance(n, ast.Call)]
            built = [c for c in calls if isinstance(c.func, ast.Name) and c.func.id == "ApiError"]
            assert len(built) <= 1, f"{function.name} builds {len(built)} ApiErrors"
            owners += [function.name] * len(built)
    assert len(owners) == len(set(owners)) and owners, owners


def test_sessions_hold_no_sql() -> None:
    """The sessions room decides; its SQL lives in storage repositories."""
    for path in modules("allinone/core/sessions"):
        for call in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
                assert call.func.attr not in {"execute", "executemany", "fetchone", "fetchall"}, (
                    f"{path}:{call.lineno}: runs SQL itself"
                )


# The readiness check's own write: proving the store takes writes is its job.
STORAGE_PROBES = {"allinone/core/api/health.py"}


def test_api_handlers_run_no_transactions_or_sql() -> None:
    """Transactions and SQL live in storage/ and the domain; handlers call the domain."""
    for path in modules("allinone/core/api"):
        relative = path.relative_to(ROOT).as_posix()
        for call in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
                continue
            name = call.func.attr
            assert name not in {"execute", "executemany", "fetchone", "fetchall"}, (
                f"{relative}:{call.lineno}: runs SQL itself"
            )
            target = call.func.value
            on_db = isinstance(target, ast.Attribute) and target.attr == "_db"
            if name == "write" and on_db and relative not in STORAGE_PROBES:
                raise AssertionError(f"{relative}:{call.lineno}: runs a transaction itself")


MAX_FUNCTION_LINES = 60


def test_no_function_is_over_sixty_lines() -> None:
    """STYLE.md: past 60 lines a function is doing two jobs."""
    long = []
    for folder in ("allinone", "runtime", "storage"):
        for path in modules(folder):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    if lines > MAX_FUNCTION_LINES:
                        long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert long == []
