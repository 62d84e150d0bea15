"""The Files API through the official SDK: upload, list (purpose filter, pagination),
retrieve, content, delete, and the clean-up pattern the SDK's helpers document."""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path

import openai
import pytest
from openai import OpenAI

from tests.api.support import Surface


def _upload(client: OpenAI, name: str, data: bytes) -> str:
    created = client.files.create(file=(name, io.BytesIO(data)), purpose="user_data")
    assert created.filename == name and created.bytes == len(data)
    assert created.object == "file" and created.purpose == "user_data"
    return created.id


def test_upload_retrieve_content_delete(surface: Surface) -> None:
    client = surface.new_client("files")
    data = os.urandom(700 * 1024)  # several chunks each way
    file_id = _upload(client, "data.bin", data)

    got = client.files.retrieve(file_id)
    assert (got.id, got.bytes, got.filename, got.status) == (
        file_id,
        len(data),
        "data.bin",
        "processed",
    )
    body = client.files.content(file_id)
    assert hashlib.sha256(body.read()).digest() == hashlib.sha256(data).digest()
    assert client.files.wait_for_processing(file_id).status == "processed"
    text_id = _upload(client, "note.txt", b"plain text")
    with pytest.warns(DeprecationWarning):
        assert client.files.retrieve_content(text_id) == "plain text"

    deleted = client.files.delete(file_id)
    assert (deleted.id, deleted.deleted, deleted.object) == (file_id, True, "file")
    with pytest.raises(openai.NotFoundError):
        client.files.retrieve(file_id)
    with pytest.raises(openai.NotFoundError):
        client.files.content(file_id)
    with pytest.raises(openai.NotFoundError):
        client.files.delete(file_id)


def test_list_pages_and_filters_by_purpose(surface: Surface) -> None:
    client = surface.new_client("files-list")
    ids = [_upload(client, f"f{n}.txt", f"file {n}".encode()) for n in range(5)]

    newest_first = [f.id for f in client.files.list()]
    assert newest_first == list(reversed(ids))
    paged = [f.id for f in client.files.list(limit=2, order="asc")]  # auto-pagination
    assert paged == ids
    first = client.files.list(limit=2, order="asc")
    assert first.has_more and [f.id for f in first.data] == ids[:2]
    assert [f.id for f in client.files.list(purpose="user_data", order="asc")] == ids
    assert list(client.files.list(purpose="batch")) == []
    with pytest.raises(openai.BadRequestError) as raised:
        client.files.list(limit=0)
    assert raised.value.param == "limit"


def test_files_are_private_to_their_project(surface: Surface) -> None:
    owner, other = surface.new_client("files-a"), surface.new_client("files-b")
    file_id = _upload(owner, "mine.txt", b"mine")
    assert list(other.files.list()) == []
    with pytest.raises(openai.NotFoundError):
        other.files.retrieve(file_id)
    with pytest.raises(openai.NotFoundError):
        other.files.content(file_id)
    with pytest.raises(openai.NotFoundError):
        other.files.delete(file_id)
    assert owner.files.retrieve(file_id).id == file_id


def test_the_sdk_helpers_clean_up_pattern(surface: Surface, tmp_path: Path) -> None:
    """`environments.files.prepare` and `.upload` upload through the Files API; the
    caller owns those uploads and deletes them once the environment holds the files."""
    client = surface.new_client("files-helpers")
    (tmp_path / "input.csv").write_bytes(b"a,b\n1,2\n")
    (tmp_path / "notes.md").write_bytes(b"# notes\n")
    prepared = client.beta.agents.environments.files.prepare(
        {"/workspace/data/input.csv": tmp_path / "input.csv"}
    )
    environment = client.beta.agents.environments.create(
        environment={"type": "openai_hosted", "files": prepared.files}
    )
    staged = client.beta.agents.environments.files.upload(
        environment.id, file=tmp_path / "notes.md", path="/workspace/notes.md"
    )
    assert staged.file.path == "/workspace/notes.md"
    owned = [*prepared.uploaded_file_ids, staged.uploaded_file_id]
    assert sorted(f.id for f in client.files.list()) == sorted(owned)
    for file_id in owned:
        assert client.files.delete(file_id).deleted
    assert list(client.files.list()) == []
    listed = [f.path for f in client.beta.agents.environments.files.list(environment.id)]
    assert sorted(listed) == ["/workspace/data/input.csv", "/workspace/notes.md"]
