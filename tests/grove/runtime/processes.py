"""Running the real `grove` command in subprocesses, on throwaway data folders."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from grove.runtime import config

GROVE = [sys.executable, "-m", "grove"]


def grove_env(home: Path | None, **overrides: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in config.SETTINGS and k not in ("DJANGO_SETTINGS_MODULE", "GROVE_HOME")}
    if home is not None:
        env["GROVE_HOME"] = str(home)
    env.update(overrides)
    return env


def run_grove(*args: str, home: Path | None, timeout: float = 180, **env: str):
    return subprocess.run([*GROVE, *args], env=grove_env(home, **env), capture_output=True,
                          text=True, timeout=timeout, check=False)


def create_user(home: Path, username: str) -> None:
    """An account made with the real `grove createsuperuser --noinput`."""
    made = run_grove("createsuperuser", "--noinput", home=home,
                     DJANGO_SUPERUSER_USERNAME=username,
                     DJANGO_SUPERUSER_PASSWORD="a long enough passphrase 42",
                     DJANGO_SUPERUSER_EMAIL=f"{username}@example.com")
    assert made.returncode == 0, made.stderr


def make_home() -> Path:
    """A data folder the embedded server may use even when tests run as root: under the
    world-traversable temp dir, entered (not listed) by others."""
    home = Path(tempfile.mkdtemp(prefix="grove-serve-", dir="/tmp"))  # noqa: S108
    home.chmod(0o711)
    return home


def remove_home(home: Path) -> None:
    from grove.runtime.embedded import EmbeddedPostgres

    server = EmbeddedPostgres(home)
    if server.is_running():
        server._stop_server()
    shutil.rmtree(home, ignore_errors=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Serve:
    """`grove serve` in the background, with its output collected."""

    def __init__(self, home: Path, port: int | None = None, env: dict[str, str] | None = None,
                 cwd: Path | None = None, args: tuple[str, ...] = ()):
        self.home = home
        self.port = port or free_port()
        self.log = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            [*GROVE, "serve", "--port", str(self.port), *args],
            env=grove_env(home, **(env or {})),
            stdout=self.log, stderr=subprocess.STDOUT, text=True, cwd=cwd,
        )
        self.url = f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        """Everything written so far. Read with pread: the server and its worker write
        through this very file description, so moving its offset (seek, read) while they
        write would make them overwrite what is there."""
        fd = self.log.fileno()
        return os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace")

    def wait_ready(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"grove serve exited early:\n{self.output()}")
            if "Grove is running at" in self.output():
                try:
                    httpx.get(self.url + "/login/", timeout=2)
                    return
                except httpx.TransportError:
                    pass
            time.sleep(0.1)
        raise AssertionError(f"grove serve did not start:\n{self.output()}")

    def get(self, path: str, **kwargs) -> httpx.Response:
        return httpx.get(self.url + path, timeout=10, **kwargs)

    def stop(self, signum: int, timeout: float = 30) -> int:
        self.proc.send_signal(signum)
        return self.proc.wait(timeout=timeout)


def children(pid: int) -> list[int]:
    """Direct child processes of pid (Linux /proc)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


OWNER_PASSWORD = "a long enough passphrase 42"  # noqa: S105
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def owner_and_key(serve: Serve, name: str = "test") -> str:
    """On a started server: the owner `owner` through the setup form, then an API key
    with everything from `grove key create`."""
    with httpx.Client(base_url=serve.url, timeout=30) as web:
        page = web.get("/setup/")
        created = web.post("/setup/", data={
            "csrfmiddlewaretoken": CSRF.search(page.text).group(1), "username": "owner",
            "password": OWNER_PASSWORD, "password_again": OWNER_PASSWORD})
        assert created.status_code == 302, created.text[:500]
    made = run_grove("key", "create", "--user", "owner", "--name", name, "--all",
                     home=serve.home)
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()
