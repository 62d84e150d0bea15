"""A package registered without running its `__init__` until something asks for it.

uvicorn's `__init__` imports its command line (`uvicorn.main`: click, the reload and
multiprocess supervisors, multiprocessing), which the server never uses: it needs
`uvicorn.config`, `uvicorn.server` and the protocols. `without_init` puts the package in
`sys.modules` with its path set, so its submodules import as usual, plus the names its
own modules take from it (`from uvicorn import Config`). The first access to any other
name (`uvicorn.run`, `uvicorn.__version__`) runs the real `__init__` in that same module
object, so later users see the package as it always is.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Mapping


def without_init(package: str, names: Mapping[str, str]) -> None:
    """Register `package` without its `__init__`, with each name of `names` taken from
    the submodule it maps to. Nothing happens when the package is already imported."""
    if package in sys.modules:
        return
    spec = importlib.util.find_spec(package)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def complete(name: str) -> object:
        vars(module).pop("__getattr__", None)
        loader.exec_module(module)
        return getattr(module, name)

    vars(module)["__getattr__"] = complete
    sys.modules[package] = module
    try:
        for name, submodule in names.items():
            setattr(module, name, getattr(importlib.import_module(submodule), name))
    except BaseException:
        del sys.modules[package]
        raise


def server_packages() -> None:
    """Register the packages the server imports in part (call before importing them)."""
    without_init("uvicorn", {"Config": "uvicorn.config", "Server": "uvicorn.server"})
