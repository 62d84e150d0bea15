"""Tier 3: the content-addressed blob store on a real directory."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import pytest

from storage.blobs import BlobStore


def test_put_is_idempotent_and_sweep_keeps_only_referenced_blobs(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs", threshold=4)
    bodies = [b"first body", b"second body", b"third body"]
    names = [hashlib.sha256(body).hexdigest() for body in bodies]
    for name, body in zip(names, bodies, strict=True):
        store.put(name, body)
        store.put(name, body)
    assert sorted(store.names()) == sorted(names)
    assert not list((tmp_path / "blobs").glob("*/.tmp-*"))
    assert store.sweep({names[0]}, dry_run=True) == sorted(names[1:])
    assert sorted(store.names()) == sorted(names)
    assert store.sweep({names[0]}) == sorted(names[1:])
    assert list(store.names()) == [names[0]]
    assert store.read(names[0]) == bodies[0]
    # A writer whose blob a sweep removed writes it again before referencing it.
    store.ensure(names[1], bodies[1])
    assert store.read(names[1]) == bodies[1]
    assert store.holds(4) and not store.holds(3)


def test_a_name_that_is_not_a_digest_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        BlobStore(tmp_path).path("../escape")


def test_put_from_streams_and_refuses_a_body_that_does_not_match(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    body = bytes(range(256)) * 3000  # several chunks
    name = hashlib.sha256(body).hexdigest()
    store.put_from(name, io.BytesIO(body))
    with store.open(name) as handle:
        assert handle.read() == body
    wrong = hashlib.sha256(b"another body").hexdigest()
    with pytest.raises(ValueError, match="does not match"):
        store.put_from(wrong, io.BytesIO(body))
    assert list(store.names()) == [name]
    assert not list((tmp_path / "blobs").glob("*/.tmp-*"))
