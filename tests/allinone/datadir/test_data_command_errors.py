"""The data directory's commands refuse what they cannot do in one line on stderr with
exit status 1: no traceback, no temporary file's name, no file left half made."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from allinone import cli
from allinone.datadir.bundle import default_project
from allinone.datadir.collection import DATABASE_FILE
from tests.allinone.datadir.test_gc import corebox
from tests.conftest import Server, start_server
from tests.support import databases


def refused(done: subprocess.CompletedProcess[str], said: str) -> None:
    assert (done.returncode, done.stdout, done.stderr) == (1, "", f"corebox: error: {said}\n")


def test_storage_and_gc_without_a_database_say_so(tmp_path: Path) -> None:
    empty = tmp_path / "data"
    empty.mkdir()
    for command in ("storage", "gc"):
        refused(corebox(empty, command), f"no database in {empty}")
    assert list(empty.iterdir()) == []


def test_export_refuses_what_it_cannot_find_or_write(server: Server, tmp_path: Path) -> None:
    data_dir = server.data_dir
    nowhere = tmp_path / "missing" / "demo.bundle"
    refused(
        corebox(data_dir, "export", "-o", str(nowhere)),
        f"cannot write {nowhere}: No such file or directory",
    )
    bundle = tmp_path / "demo.bundle"
    project = corebox(data_dir, "export", "-o", str(bundle), "--project", "proj_missing")
    refused(project, "there is no project proj_missing")
    made = corebox(data_dir, "export", "-o", str(bundle))
    project_id = default_project(data_dir)
    assert made.returncode == 0, made.stderr
    assert made.stdout.endswith(f" bytes from project {project_id}\n"), made.stdout
    for flag, kind in (("--sessions", "session"), ("--agents", "agent")):
        mistyped = corebox(data_dir, "export", "-o", str(bundle), flag, "x_nope", "x_gone")
        refused(mistyped, f"project {project_id} has no {kind} x_gone, x_nope (or it is deleted)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.bundle"]


def test_an_export_is_its_owners_alone_whatever_the_umask(server: Server, tmp_path: Path) -> None:
    """A bundle carries every transcript it exports: like a backup, it is 0600, also
    where it replaces a file anyone could read."""
    bundle = tmp_path / "demo.bundle"
    bundle.write_bytes(b"old")
    bundle.chmod(0o644)
    made = corebox(server.data_dir, "export", "-o", str(bundle))
    assert made.returncode == 0, made.stderr
    assert bundle.stat().st_mode & 0o777 == 0o600
    assert bundle.read_bytes() != b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.bundle"]


def test_export_and_import_refuse_an_archived_default_project(tmp_path: Path) -> None:
    """No other project stands in for an archived default: a bundle without --project
    would silently be another project's."""
    data_dir = tmp_path / "data"
    start_server(data_dir).stop()
    project_id = default_project(data_dir)
    with databases.raw(databases.location(data_dir)) as db:
        db.execute(
            "INSERT INTO projects (id, name, created_at) VALUES ('proj_second', 'second', ?)",
            (int(time.time()) + 1,),
        )
        db.execute("UPDATE projects SET archived_at = 1 WHERE id = ?", (project_id,))
    said = f"the default project {project_id} is archived; name a project with --project"
    bundle = tmp_path / "demo.bundle"
    refused(corebox(data_dir, "export", "-o", str(bundle)), said)
    bundle.write_text("{}")
    refused(corebox(data_dir, "import", str(bundle)), said)


def test_import_names_a_file_it_cannot_read(server: Server, tmp_path: Path) -> None:
    missing = tmp_path / "nothing.bundle"
    refused(
        corebox(server.data_dir, "import", str(missing)),
        f"cannot read {missing}: No such file or directory",
    )


def test_backup_and_restore_refuse_a_path_they_cannot_use(server: Server, tmp_path: Path) -> None:
    nowhere = tmp_path / "missing" / "corebox.backup"
    refused(
        corebox(server.data_dir, "backup", str(nowhere)),
        f"cannot write {nowhere}: {nowhere.parent} is not a writable directory",
    )
    target = tmp_path / "restored"
    refused(
        corebox(target, "restore", str(nowhere)),
        f"cannot read {nowhere}: there is no such file",
    )
    assert not target.exists()  # nothing is made for a backup that is not there
    text = tmp_path / "notes.txt"
    text.write_text("not a backup\n")
    refused(
        corebox(target, "restore", str(text)),
        f"{text} is not a corebox backup (not a tar archive)",
    )
    assert not target.exists()


def test_restore_replace_refuses_a_data_directory_a_server_is_serving(
    server: Server, tmp_path: Path
) -> None:
    # Replaced under a running server, the database file would be swapped out from under
    # it: every write it acknowledged afterwards would go to a file no longer there.
    backup = tmp_path / "corebox.backup"
    made = corebox(server.data_dir, "backup", str(backup))
    assert made.returncode == 0, made.stderr
    database = server.data_dir / DATABASE_FILE
    before = database.stat().st_ino
    done = corebox(server.data_dir, "restore", str(backup), "--replace")
    assert (done.returncode, done.stdout) == (1, ""), done
    pid = server.process.pid
    assert done.stderr == (
        f"corebox: error: the database {database} is served by another corebox (process"
        f" {pid}); stop it first, or give this one another --data-dir\n"
    )
    assert database.stat().st_ino == before  # the served file is the one still there
    # Stopped, the same directory is replaced.
    stopped = tmp_path / "stopped"
    assert corebox(stopped, "restore", str(backup)).returncode == 0
    again = corebox(stopped, "restore", str(backup), "--replace")
    assert again.returncode == 0, again.stderr


@pytest.mark.parametrize("given", ["-1", "36501", "nan", "a week"])
def test_retention_days_out_of_range_are_refused_naming_the_option(
    given: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        cli.main(["gc", "--retention-days", given])
    assert stopped.value.code == 2
    said = f"argument --retention-days: must be a number of days from 0 to 36500, not {given!r}"
    assert capsys.readouterr().err.endswith(f"corebox gc: error: {said}\n")
