"""The receiver is a remote client: it imports nothing of Core, storage or the Runtime,
only what a client on another machine would have."""

from __future__ import annotations

from tests.test_layout import imports_of, modules


def test_the_receiver_imports_no_core_storage_or_runtime_code() -> None:
    for path in modules("allinone/receiver"):
        for name in imports_of(path):
            assert not name.startswith(("allinone.core", "storage", "runtime")), (
                f"{path}: imports {name}"
            )
            if name.startswith("allinone"):
                assert name.startswith("allinone.receiver"), f"{path}: imports {name}"


def test_adapters_never_run_through_a_shell() -> None:
    source = (modules("allinone/receiver")[0].parent / "adapters.py").read_text()
    assert "shell=False" in source and "shell=True" not in source
