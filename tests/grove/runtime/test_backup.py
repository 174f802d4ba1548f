"""`grove backup` / `grove restore` (issue 23, item 1) with real processes: a backup taken
while clients write restores to a consistent state that agrees row by row with the
source; a backup of a quiet Grove restores identical, and the restored Grove serves the
same notes to the same API key and the same share link; a restore refuses a folder that
holds anything, a damaged backup and one from a newer Grove, loads only the bytes it
checked, and a restore that fails removes what it loaded; a backup never overwrites a
file, and one that fails says so in one line and leaves nothing."""

from __future__ import annotations

import hashlib
import io
import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import tarfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from psycopg import sql

from grove.runtime import embedded
from grove.runtime import restore as restore_module
from grove.runtime.backup import PgTarget
from grove.runtime.backup_file import CHUNK, BackupError, BackupWriter, read_backup
from grove.runtime.embedded import EmbeddedPostgres
from tests.grove.runtime.processes import (
    CSRF,
    GROVE,
    OWNER_PASSWORD,
    Serve,
    grove_env,
    make_home,
    owner_and_key,
    remove_home,
    run_grove,
)

pytestmark = pytest.mark.slow

# Many writes a second from one key and one address: no rate limits in the way.
UNLIMITED = {"GROVE_API_RATE_LIMIT": "0", "GROVE_ADDRESS_RATE_LIMIT": "0"}
SHARED_TEXT = "Shared before the backup: the apple tree blossoms in the first week of May."


def superuser(home: Path) -> psycopg.Connection:
    db = embedded.database_settings(home, role=embedded.SUPERUSER)
    return psycopg.connect(host=db["HOST"], port=db["PORT"], user=db["USER"],
                           dbname=db["NAME"], autocommit=True)


@contextmanager
def database_of(home: Path) -> Iterator[psycopg.Connection]:
    """A data folder's database, its server started by this process for the reading."""
    server = EmbeddedPostgres(home)
    server.ensure_running()
    try:
        with superuser(home) as conn:
            yield conn
    finally:
        server.release()


def rows(conn: psycopg.Connection, table: str, key: str = "id") -> dict[Any, dict[str, Any]]:
    cursor = conn.execute(sql.SQL("SELECT * FROM {}").format(sql.Identifier(table)))
    names = [column.name for column in cursor.description or []]
    return {row[names.index(key)]: dict(zip(names, row, strict=True)) for row in cursor}


def without(row: dict[str, Any], *columns: str) -> dict[str, Any]:
    return {name: value for name, value in row.items() if name not in columns}


def everything(conn: psycopg.Connection) -> dict[str, list[str]]:
    """Every table of the public schema, its rows in a fixed order, and every sequence."""
    tables = [name for (name,) in conn.execute(
        "SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")]
    found = {table: sorted(repr(row) for row in conn.execute(
        sql.SQL("SELECT * FROM {}").format(sql.Identifier(table)))) for table in tables}
    found["(sequences)"] = sorted(repr(row) for row in conn.execute(
        "SELECT sequencename::text, last_value FROM pg_sequences WHERE schemaname = 'public'"))
    return found


class Writers:
    """Threads saving notes over REST and correcting each one right after."""

    def __init__(self, url: str, key: str, threads: int = 4):
        self.url, self.key = url, key
        self.stop = threading.Event()
        self.saved = 0
        self.errors: list[str] = []
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._write, args=(n,)) for n in range(threads)]

    def __enter__(self) -> Writers:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=60)

    def wait_for(self, saved: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while self.saved < saved and not self.errors:
            assert time.monotonic() < deadline, f"only {self.saved} notes saved"
            time.sleep(0.05)
        assert not self.errors, self.errors[:3]

    def _write(self, n: int) -> None:
        headers = {"Authorization": f"Bearer {self.key}"}
        with httpx.Client(base_url=self.url, headers=headers, timeout=30) as client:
            i = 0
            while not self.stop.is_set():
                i += 1
                made = client.post("/v1/notes", json={
                    "content": f"Writer {n}, note {i}: the compost pile is {i} degrees.",
                    "kind": "fact"})
                if made.status_code != 201:
                    self.errors.append(f"save {made.status_code}: {made.text[:200]}")
                    return
                fixed = client.patch(f"/v1/notes/{made.json()['data']['id']}", json={
                    "content": f"Writer {n}, note {i}: the compost pile is {i + 1} degrees.",
                    "expectedVersion": 1})
                if fixed.status_code != 200:
                    self.errors.append(f"correct {fixed.status_code}: {fixed.text[:200]}")
                    return
                with self.lock:
                    self.saved += 1


def share_a_note(serve: Serve, key: str) -> tuple[str, str]:
    """A note saved with the key and published by the owner's website session:
    (note id, the share link's path)."""
    note = httpx.post(f"{serve.url}/v1/notes", timeout=30,
                      headers={"Authorization": f"Bearer {key}"},
                      json={"content": SHARED_TEXT, "kind": "fact"})
    assert note.status_code == 201, note.text
    note_id = note.json()["data"]["id"]
    with httpx.Client(base_url=serve.url, timeout=30) as web:
        page = web.get("/login/")
        signed_in = web.post("/login/", data={
            "csrfmiddlewaretoken": CSRF.search(page.text).group(1), "username": "owner",
            "password": OWNER_PASSWORD})
        assert signed_in.status_code == 302, signed_in.text[:300]
        shared = web.post("/v1/shares", json={"noteId": note_id},
                          headers={"X-CSRFToken": web.cookies["csrftoken"],
                                   "Origin": serve.url})
        assert shared.status_code == 201, shared.text
    return note_id, f"/public/shares/{shared.json()['data']['token']}"


def restore(backup: Path, home: Path) -> subprocess.CompletedProcess[str]:
    restored = run_grove("restore", str(backup), home=home, **UNLIMITED)
    assert restored.returncode == 0, restored.stderr
    assert "Traceback" not in restored.stderr
    return restored


def assert_consistent(conn: psycopg.Connection) -> None:
    """Every note has its current revision; no job points at nothing."""
    headless = conn.execute(
        "SELECT n.id FROM notebooks_note n LEFT JOIN notebooks_revision r "
        "ON r.note_id = n.id AND r.version = n.version WHERE r.id IS NULL").fetchall()
    assert headless == []
    kinds = {kind for (kind,) in conn.execute("SELECT DISTINCT kind FROM grove_job")}
    assert kinds <= {"embed"}, kinds  # the only work this load makes
    orphans = conn.execute(
        "SELECT j.id FROM grove_job j LEFT JOIN notebooks_note n ON n.id = j.target_id "
        "WHERE n.id IS NULL").fetchall()
    assert orphans == []


def assert_a_moment_of(source: psycopg.Connection, restored: psycopg.Connection) -> None:
    """The restored rows are the source's as they were at one moment: the source may
    have more rows (made after it) and newer versions, never different ones."""
    notes, restored_notes = rows(source, "notebooks_note"), rows(restored, "notebooks_note")
    assert 0 < len(restored_notes) < len(notes)  # the backup was taken mid-load
    revisions = rows(source, "notebooks_revision")
    restored_revisions = rows(restored, "notebooks_revision")
    for pk, revision in restored_revisions.items():
        assert revision == revisions[pk]  # history is append-only: identical
    by_version = {(r["note_id"], r["version"]): r for r in restored_revisions.values()}
    newer = set()
    for pk, note in restored_notes.items():
        now = notes[pk]
        if now["version"] == note["version"]:
            # The worker marks a note indexed after the embedding is stored.
            assert without(note, "indexing") == without(now, "indexing")
        else:
            assert now["version"] > note["version"]
            newer.add(pk)
        assert note["content"] == by_version[(pk, note["version"])]["content"]
    passages = rows(source, "passages_passage")
    for pk, passage in rows(restored, "passages_passage").items():
        # A passage's text never changes: an edit replaces the passages it touches.
        assert passage["note_id"] in restored_notes
        assert passage == passages.get(pk) or passage["note_id"] in newer
    vectors, restored_vectors = (rows(source, "passages_passagevector"),
                                 rows(restored, "passages_passagevector"))
    for pk, vector in restored_vectors.items():
        assert vector["note_id"] in restored_notes
        # A vector belongs to one passage, and goes with it: unchanged unless its note
        # changed after the snapshot.
        assert vector == vectors.get(pk) or vector["note_id"] in newer
    connections, restored_connections = (rows(source, "grove_connection"),
                                         rows(restored, "grove_connection"))
    assert restored_connections
    for pk, connection in restored_connections.items():
        assert without(connection, "last_used_at") == without(connections[pk], "last_used_at")
    assert rows(restored, "sharing_share") == rows(source, "sharing_share")


def test_a_backup_under_load_restores_consistent_and_a_quiet_one_identical(home, tmp_path):
    started = time.monotonic()
    restored_homes: list[Path] = []
    try:
        key, note_id, share_path = backup_under_load(home, tmp_path, restored_homes)
        print(f"under load: {time.monotonic() - started:.1f} s")
        quiet = tmp_path / "quiet.tar"
        taken = run_grove("backup", str(quiet), home=home)  # starts the database itself
        assert taken.returncode == 0, taken.stderr
        second = make_home()
        restored_homes.append(second)
        restore(quiet, second)
        assert (second / "secret_key").read_bytes() == (home / "secret_key").read_bytes()
        assert stat.S_IMODE((second / "secret_key").stat().st_mode) == 0o600
        with database_of(home) as source, database_of(second) as restored:
            assert_consistent(restored)
            before, after = everything(source), everything(restored)
        assert before.keys() == after.keys()
        assert [table for table in before if before[table] != after[table]] == []
        assert len(before["notebooks_note"]) > 50 and before["passages_passagevector"]

        restarted = Serve(second, env=UNLIMITED)
        try:
            restarted.wait_ready(timeout=180)
            read = restarted.get(f"/v1/notes/{note_id}",
                                 headers={"Authorization": f"Bearer {key}"})
            public = restarted.get(share_path)
        finally:
            code = restarted.stop(signal.SIGTERM)
        assert code == 0 and "Traceback" not in restarted.output(), restarted.output()
        assert read.status_code == 200, read.text
        assert read.json()["data"]["content"] == SHARED_TEXT
        assert public.status_code == 200
        assert "the apple tree blossoms" in public.text
    finally:
        for restored_home in restored_homes:
            remove_home(restored_home)
    print(f"backups, restores and comparisons: {time.monotonic() - started:.1f} s")


def backup_under_load(home: Path, tmp_path: Path,
                      restored_homes: list[Path]) -> tuple[str, str, str]:
    """`grove backup` while four clients write; its restore compared with the source.
    Returns the API key, a shared note's id and its share link's path."""
    serve = Serve(home, env=UNLIMITED)
    try:
        serve.wait_ready(timeout=180)
        key = owner_and_key(serve, "backup test")
        note_id, share_path = share_a_note(serve, key)
        under_load = tmp_path / "under-load.tar"
        with Writers(serve.url, key) as writers:
            writers.wait_for(30)
            taken = run_grove("backup", str(under_load), home=home)
            assert taken.returncode == 0, taken.stderr
            writers.wait_for(writers.saved + 20)  # and the load goes on after the snapshot
        assert not writers.errors, writers.errors[:3]
        assert f"backup written: {under_load} (" in taken.stdout
        assert "it holds the secret key" in taken.stdout
        assert stat.S_IMODE(under_load.stat().st_mode) == 0o600
        checked = subprocess.run(["sha256sum", "-c", under_load.name + ".sha256"],
                                 cwd=tmp_path, capture_output=True, text=True, check=False)
        assert checked.returncode == 0 and ": OK" in checked.stdout, checked.stdout

        first = make_home()
        restored_homes.append(first)
        restore(under_load, first)
        assert not EmbeddedPostgres(first).is_running()  # the restore stopped what it started
        with superuser(home) as source, database_of(first) as restored:
            assert_consistent(restored)
            assert_a_moment_of(source, restored)
    finally:
        code = serve.stop(signal.SIGTERM)
    assert code == 0, serve.output()
    return key, note_id, share_path


@pytest.fixture(scope="module")
def small_backup(tmp_path_factory) -> Iterator[tuple[Path, Path]]:
    """(data folder, a backup of it): a fresh Grove, enough for the refusals."""
    home = make_home()
    path = tmp_path_factory.mktemp("backups") / "small.tar"
    try:
        taken = run_grove("backup", str(path), home=home)
        assert taken.returncode == 0, taken.stderr
        yield home, path
    finally:
        remove_home(home)


def folder_state(folder: Path) -> list[tuple[str, int, str]]:
    return sorted((str(p.relative_to(folder)), stat.S_IMODE(p.stat().st_mode),
                   hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "")
                  for p in [folder, *folder.rglob("*")])


def test_restore_refuses_a_folder_that_holds_anything_and_leaves_it_alone(small_backup):
    _, backup = small_backup
    target = make_home()
    try:
        (target / "notes.txt").write_text("mine\n")
        before = folder_state(target)
        refused = run_grove("restore", str(backup), home=target)
        assert refused.returncode == 1
        assert refused.stderr.splitlines() == [
            f"grove: error: GROVE_HOME {target} is not empty; a backup is restored only into "
            "a new or empty data folder (nothing was changed)"]
        assert folder_state(target) == before
    finally:
        shutil.rmtree(target)


def test_restore_refuses_a_damaged_backup_and_creates_nothing(small_backup, tmp_path):
    _, backup = small_backup
    target = tmp_path / "new-home"
    flipped = tmp_path / "flipped.tar"  # no checksum file beside it: the members' catch it
    data = bytearray(backup.read_bytes())
    with tarfile.open(backup) as tar:
        dump = tar.getmember("database.dump")
    data[dump.offset_data + dump.size // 2] ^= 0x01  # one bit inside the database dump
    flipped.write_bytes(bytes(data))
    refused = run_grove("restore", str(flipped), home=target)
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        f"grove: error: {flipped}: damaged (database.dump does not match its checksum)"]
    assert not target.exists()

    cut = tmp_path / "cut.tar"
    cut.write_bytes(backup.read_bytes()[:len(data) // 2])
    refused = run_grove("restore", str(cut), home=target)
    assert refused.returncode == 1 and "damaged" in refused.stderr
    assert len(refused.stderr.splitlines()) == 1 and not target.exists()

    whole = tmp_path / "whole.tar"  # intact, but its checksum file disagrees
    shutil.copy(backup, whole)
    (tmp_path / "whole.tar.sha256").write_text(f"{'0' * 64}  whole.tar\n")
    refused = run_grove("restore", str(whole), home=target)
    assert refused.returncode == 1 and "does not match its checksum in" in refused.stderr
    assert not target.exists()


@pytest.mark.parametrize(("migration", "unknown"), [
    (["grove", "9999_from_the_future"], "migration grove.9999_from_the_future is unknown here"),
    (["insights", "0001_initial"], "app 'insights' is unknown here"),
])
def test_restore_refuses_a_backup_from_a_newer_grove(small_backup, tmp_path, migration,
                                                     unknown):
    """Its schema has a migration, or a whole app, this Grove does not know: upgrade
    first."""
    _, backup = small_backup
    newer = tmp_path / "newer.tar"
    with tarfile.open(backup) as source, tarfile.open(newer, "w") as target:
        for member in source.getmembers():
            data = source.extractfile(member).read()
            if member.name == "manifest.json":
                manifest = json.loads(data)
                manifest["migrations"].append(migration)
                data = json.dumps(manifest).encode()
                member.size = len(data)
            target.addfile(member, io.BytesIO(data))
    target_home = tmp_path / "new-home"
    refused = run_grove("restore", str(newer), home=target_home)
    assert refused.returncode == 1
    assert len(refused.stderr.splitlines()) == 1
    assert "made by a newer Grove" in refused.stderr and unknown in refused.stderr
    assert not target_home.exists()


def test_the_apps_a_restore_knows_are_the_apps_with_migrations():
    from django.apps import apps
    from django.db.migrations.loader import MigrationLoader

    migrated = MigrationLoader(None, ignore_no_migrations=True).migrated_apps
    assert restore_module.MIGRATING_APPS == {
        label: apps.get_app_config(label).name for label in migrated}


def a_backup_file(path: Path, dump: bytes) -> Path:
    """A backup file as `grove backup` writes it, around any bytes as its dump."""
    writer = BackupWriter(path)
    writer.add_bytes("database.dump", dump)
    writer.finish({"format": 1})
    return path


def test_a_restore_loads_only_the_bytes_it_checked(tmp_path):
    """The dump is streamed from the file descriptor that was checked: a file swapped
    for another after the check is not read, one rewritten in place is refused before
    its last chunk is handed over (pg_restore commits only after it), and so is one
    rewritten while `pg_restore --list` read its beginning."""
    dump = os.urandom(2 * CHUNK + CHUNK // 2)
    path = a_backup_file(tmp_path / "checked.tar", dump)
    backup = read_backup(path)
    try:
        swapped = a_backup_file(tmp_path / "other.tar", os.urandom(len(dump)))
        swapped.replace(path)  # the name now points at another, equally valid file
        loaded = bytearray()
        backup.copy_dump(loaded.extend)
        assert bytes(loaded) == dump
    finally:
        backup.close()

    path = a_backup_file(tmp_path / "rewritten.tar", dump)
    backup = read_backup(path)
    try:
        with tarfile.open(path) as tar:
            start = tar.getmember("database.dump").offset_data
        with path.open("r+b") as fh:  # one byte of the dump, after the check
            fh.seek(start + 10)
            fh.write(bytes([dump[10] ^ 1]))
        loaded = bytearray()
        with pytest.raises(BackupError, match="changed since it was checked"):
            backup.copy_dump(loaded.extend)
        assert len(loaded) == 2 * CHUNK  # the last chunk was held back

        def table_of_contents(chunk: bytes) -> None:
            raise BrokenPipeError  # pg_restore --list has read what it needs
        with pytest.raises(BackupError, match="changed since it was checked"):
            backup.copy_dump(table_of_contents)
    finally:
        backup.close()


def test_a_backup_that_cannot_be_written_is_one_line_and_leaves_nothing(small_backup,
                                                                        tmp_path):
    home, _ = small_backup
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder\n")
    under = run_grove("backup", str(a_file / "grove.tar"), home=home)
    assert under.returncode == 1 and "Traceback" not in under.stderr
    assert under.stderr.splitlines() == [f"CommandError: {a_file}: no such folder"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]

    if os.geteuid() != 0:  # root writes into any folder
        read_only = tmp_path / "read-only"
        read_only.mkdir(mode=0o500)
        refused = run_grove("backup", str(read_only), home=home)
        assert refused.returncode == 1 and len(refused.stderr.splitlines()) == 1
        assert "cannot be written (Permission denied)" in refused.stderr
        assert list(read_only.iterdir()) == []

    # A full disk: the backup's process may write files of 2 KB at most (the database's
    # server, started here, is not held to that), so writing the backup fails half-way.
    full = tmp_path / "full"
    full.mkdir()
    server = EmbeddedPostgres(home)
    server.ensure_running()
    try:
        failed = subprocess.run(
            [*GROVE, "backup", str(full / "grove.tar")], env=grove_env(home),
            capture_output=True, text=True, timeout=180, check=False,
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048)))
    finally:
        server.release()
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    assert failed.stderr.splitlines() == [
        f"CommandError: {full / 'grove.tar'}: cannot be written (File too large); no backup "
        "was written"]
    assert list(full.iterdir()) == []


def test_backup_never_overwrites_a_file(small_backup, tmp_path):
    home, _ = small_backup
    existing = tmp_path / "existing.tar"
    existing.write_bytes(b"an older backup")
    refused = run_grove("backup", str(existing), home=home)
    assert refused.returncode == 1
    assert f"{existing} exists; a backup never overwrites a file" in refused.stderr
    assert existing.read_bytes() == b"an older backup"
    assert not (tmp_path / "existing.tar.partial").exists()

    folder = tmp_path / "backups"
    folder.mkdir()
    into = run_grove("backup", str(folder), home=home)  # a folder: the default name in it
    assert into.returncode == 0, into.stderr
    written = [p.name for p in folder.iterdir()]
    assert len(written) == 2, written
    name = next(n for n in written if n.endswith(".tar"))
    assert name.startswith("grove-") and f"{name}.sha256" in written


def public_schema(conn: psycopg.Connection) -> tuple[list[Any], list[str], list[Any]]:
    """What a database's public schema holds that belongs to no extension, its
    extensions, and who may do what in the schema."""
    own = conn.execute(
        "SELECT 'relation', relname::text FROM pg_class c WHERE relnamespace = 'public'::"
        "regnamespace AND NOT EXISTS (SELECT FROM pg_depend WHERE classid = 'pg_class'::"
        "regclass AND objid = c.oid AND deptype = 'e') UNION ALL SELECT 'function', "
        "proname::text FROM pg_proc p WHERE pronamespace = 'public'::regnamespace AND NOT "
        "EXISTS (SELECT FROM pg_depend WHERE classid = 'pg_proc'::regclass AND objid = p.oid "
        "AND deptype = 'e') UNION ALL SELECT 'type', typname::text FROM pg_type t WHERE "
        "typnamespace = 'public'::regnamespace AND NOT EXISTS (SELECT FROM pg_depend WHERE "
        "classid = 'pg_type'::regclass AND objid = t.oid AND deptype = 'e')").fetchall()
    extensions = [name for (name,) in conn.execute(
        "SELECT extname::text FROM pg_extension ORDER BY 1")]
    rights = conn.execute("SELECT a.grantee::text, a.privilege_type FROM pg_namespace n, "
                          "aclexplode(n.nspacl) a WHERE n.nspname = 'public'").fetchall()
    return sorted(own), extensions, sorted(rights)


def test_an_external_database_is_dumped_by_a_role_that_sees_every_row(tmp_path):
    """DATABASE_URL: the schema owner (no BYPASSRLS, as deploy/postgres-init.sh makes it)
    may not dump; a superuser's --database-url may; the owner restores into an empty
    database and nothing else, and a restore that fails after loading (in its migrate)
    leaves the database as it found it. An embedded server stands in for the external
    one."""
    server_home = make_home()
    server = EmbeddedPostgres(server_home)
    server.ensure_running()
    try:
        with superuser(server_home) as admin:
            for name in ("source", "target", "fresh"):  # as postgres-init.sh makes them
                admin.execute(sql.SQL("CREATE DATABASE {} OWNER grove_owner").format(
                    sql.Identifier(name)))
        socket = embedded.socket_dir(server_home)

        def urls(database: str) -> dict[str, str]:
            return {"DATABASE_URL": f"postgresql://grove@/{database}?host={socket}",
                    "GROVE_MIGRATE_DATABASE_URL":
                        f"postgresql://grove_owner@/{database}?host={socket}"}

        key = {"GROVE_SECRET_KEY": "an external Grove's secret key, 50 characters long!"}
        source_home, target_home = tmp_path / "source-home", tmp_path / "target-home"
        for args in (("migrate", "--noinput"), ("createsuperuser", "--noinput")):
            made = run_grove(*args, home=source_home, **urls("source"), **key,
                             DJANGO_SUPERUSER_USERNAME="owner",
                             DJANGO_SUPERUSER_PASSWORD=OWNER_PASSWORD,
                             DJANGO_SUPERUSER_EMAIL="owner@example.org")
            assert made.returncode == 0, made.stderr

        backup = tmp_path / "external.tar"
        refused = run_grove("backup", str(backup), home=source_home, **urls("source"), **key)
        assert refused.returncode == 1
        assert "role 'grove_owner' cannot read every row" in refused.stderr
        assert "ALTER ROLE grove_owner BYPASSRLS" in refused.stderr
        taken = run_grove("backup", str(backup), "--database-url",
                          f"postgresql://postgres@/source?host={socket}",
                          home=source_home, **urls("source"), **key)
        assert taken.returncode == 0, taken.stderr
        assert "comes from GROVE_SECRET_KEY and is NOT in the backup" in taken.stdout
        with tarfile.open(backup) as tar:
            assert sorted(tar.getnames()) == ["database.dump", "manifest.json"]

        keyless = run_grove("restore", str(backup), home=target_home, **urls("target"))
        assert keyless.returncode == 1 and not target_home.exists()
        assert "came from GROVE_SECRET_KEY and is not in the backup" in keyless.stderr
        restore_external = run_grove("restore", str(backup), home=target_home,
                                     **urls("target"), **key)
        assert restore_external.returncode == 0, restore_external.stderr

        def connect(name: str) -> psycopg.Connection:
            db = embedded.database_settings(server_home, role=embedded.SUPERUSER, name=name)
            return psycopg.connect(host=db["HOST"], port=db["PORT"], user=db["USER"],
                                   dbname=name, autocommit=True)

        same = {}
        for name in ("source", "target"):
            with connect(name) as conn:
                same[name] = everything(conn)
        assert same["source"] == same["target"] and same["target"]["grove_account"]

        again = run_grove("restore", str(backup), home=tmp_path / "third-home",
                          **urls("target"), **key)
        assert again.returncode == 1
        assert "tables in its public schema; a backup is restored only into an empty" \
            in again.stderr
        assert not (tmp_path / "third-home").exists()

        # A backup whose migration history lacks a step: it loads, then migrate fails.
        with connect("source") as conn:
            conn.execute("DELETE FROM django_migrations WHERE app = 'grove' "
                         "AND name = '0001_initial'")
        inconsistent = tmp_path / "inconsistent.tar"
        taken = run_grove("backup", str(inconsistent), "--database-url",
                          f"postgresql://postgres@/source?host={socket}",
                          home=source_home, **urls("source"), **key)
        assert taken.returncode == 0, taken.stderr
        with connect("fresh") as conn:
            before = public_schema(conn)
        failed = run_grove("restore", str(inconsistent), home=tmp_path / "fourth-home",
                           **urls("fresh"), **key)
        assert failed.returncode == 1
        assert len(failed.stderr.splitlines()) == 1, failed.stderr
        assert failed.stderr.startswith("grove: error: InconsistentMigrationHistory: ")
        with connect("fresh") as conn:
            after = public_schema(conn)
        # Tables, functions, the extensions it made (pg_trgm, fuzzystrmatch) and the
        # runtime role's USAGE on the schema: all gone again.
        assert after == before
        assert not (tmp_path / "fourth-home").exists()
        # So the same database takes a restore again at once.
        again = run_grove("restore", str(backup), home=tmp_path / "fifth-home",
                          **urls("fresh"), **key)
        assert again.returncode == 0, again.stderr
    finally:
        server.release()
        remove_home(server_home)


def test_a_load_that_cannot_be_removed_is_named_with_the_statement_that_removes_it():
    plan = restore_module._Plan(env={}, installed={"plpgsql", "vector"}, added=["pg_trgm"],
                                undo=restore_module.undo_statement(["plpgsql", "vector"], []))
    gone = PgTarget.from_url("postgresql://grove_owner@/grove?host=/nonexistent-grove-socket")
    left = restore_module._undo_load(gone, plan)
    assert left is not None and "\n" not in left
    assert left.startswith("what it loaded could not be removed from database 'grove' as "
                           "'grove_owner' at /nonexistent-grove-socket (")
    assert "everything in its public schema that belongs to no extension and the extensions " \
        "pg_trgm if it made them — remove it as 'grove_owner'" in left
    assert left.endswith(f"with: {plan.undo}") and plan.undo.startswith("DO $grove_undo$")
