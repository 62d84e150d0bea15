"""The import rules the package docstrings state, checked on the source: the Runtime
never imports Core, the wire protocol imports nothing with I/O or state, harness
adapters never reach the dispatcher or transport, and Core's gateway sees only the
protocol of the Runtime."""

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _imports(package: str) -> dict[str, set[str]]:
    """Each module file of the package -> the top-level-qualified names it imports."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / package.replace(".", "/")).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
        found[str(path.relative_to(ROOT))] = names
    return found


def _breaking(package: str, allowed: tuple[str, ...]) -> dict[str, set[str]]:
    def ok(name: str) -> bool:
        top = name.split(".")[0]
        return top in sys.stdlib_module_names or any(
            name == prefix or name.startswith(prefix + ".") for prefix in allowed
        )

    return {
        module: bad
        for module, names in _imports(package).items()
        if (bad := {name for name in names if not ok(name)})
    }


RULES = {
    "runtime": ("msgspec", "websockets", "openai", "mcp", "httpx2", "runtime"),
    "runtime.proto": ("msgspec", "runtime.proto"),
    "runtime.harness": (
        "msgspec",
        "openai",
        "mcp",
        "httpx2",
        "runtime.proto",
        "runtime.errors",
        "runtime.confinement",
        "runtime.workspaces",
        "runtime.harness",
    ),
    "allinone.core.gateway": (
        "msgspec",
        "starlette",
        "runtime.proto",
        "allinone.core.gateway",
        "allinone.core.errors",
    ),
}


@pytest.mark.parametrize("package", sorted(RULES))
def test_each_package_imports_only_what_its_docstring_allows(package: str) -> None:
    assert _breaking(package, RULES[package]) == {}


def test_the_rule_check_sees_a_breaking_import() -> None:
    assert "runtime/daemon.py" in _breaking("runtime", ("msgspec", "runtime.proto"))
