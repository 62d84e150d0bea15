"""The Runtime has one exception tree: every exception a Runtime module defines derives
from RuntimeFault, and the tree drawn in `runtime.errors` names each of them."""

import importlib
import inspect
import pkgutil

import runtime
from runtime import errors
from runtime.errors import RuntimeFault


def _runtime_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for module_info in pkgutil.walk_packages(runtime.__path__, "runtime."):
        if module_info.name.startswith("runtime.proto"):
            continue  # the wire protocol's own tree, shared with Core
        module = importlib.import_module(module_info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
            ):
                found[f"{module.__name__}.{name}"] = value
    return found


def test_every_runtime_exception_derives_from_the_root() -> None:
    exceptions = _runtime_exceptions()
    assert "runtime.dispatcher.Refused" not in exceptions  # defined once, in errors
    assert {name for name, cls in exceptions.items() if not issubclass(cls, RuntimeFault)} == set()


def test_the_drawn_tree_names_every_runtime_exception() -> None:
    drawn = errors.__doc__ or ""
    missing = {cls.__name__ for cls in _runtime_exceptions().values()} - {
        word.strip("├└─│ ") for line in drawn.splitlines() for word in line.split()
    }
    assert missing == set()
