"""compose.yaml describes a deployment that can actually run: the file is valid for
Compose, and every Grove service runs a real `grove` command with known settings."""

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from django.core.management import get_commands

from grove.runtime import config
from tests.conftest import require_program

REPO = Path(__file__).resolve().parent.parent
COMPOSE = REPO / "compose.yaml"
GROVE_SERVICES = {"migrate", "web", "worker", "beat"}


@pytest.fixture(scope="module")
def compose():
    return yaml.safe_load(COMPOSE.read_text())


def test_services_of_the_scale_out_shape(compose):
    assert set(compose["services"]) == {"db", "redis"} | GROVE_SERVICES
    assert compose["services"]["db"]["image"].startswith("pgvector/pgvector:pg18")


def test_grove_services_run_real_commands_with_known_settings(compose):
    commands = set(get_commands()) | {"serve"}
    known = set(config.SETTINGS)
    for name in GROVE_SERVICES:
        service = compose["services"][name]
        program, subcommand, *_ = service["command"]
        assert (program, subcommand in commands) == ("grove", True), name
        assert set(service["environment"]) <= known, name
    assert "GROVE_MIGRATE_DATABASE_URL" in compose["services"]["migrate"]["environment"]
    assert "--no-migrate" in compose["services"]["web"]["command"]


def test_every_setting_reaches_the_grove_services(compose):
    """A setting put in `.env` reaches web, worker and beat: compose passes a process
    only what it names (a model timeout or a metrics token left out would silently be
    the default)."""
    own = {"GROVE_MIGRATE_DATABASE_URL", "GROVE_DEBUG"}  # migrate's alone; never in production
    for name in ("web", "worker", "beat"):
        assert set(config.SETTINGS) - own <= set(compose["services"][name]["environment"]), \
            name


@pytest.mark.slow
def test_init_script_creates_both_roles(home):
    """Run deploy/postgres-init.sh as the postgres image would, on a bare PostgreSQL 18 +
    pgvector cluster (the embedded wheel's, started without Grove's own bootstrap)."""
    import os

    import psycopg

    from grove.runtime.embedded import EmbeddedPostgres

    server = EmbeddedPostgres(home)
    server._prepare()
    with server._locked():
        server._claim()
        server._start_server()
    try:
        env = {**os.environ, "POSTGRES_USER": "postgres", "GROVE_DB_OWNER_PASSWORD": "o'wner",
               "GROVE_DB_PASSWORD": "runtime", "PGHOST": str(server.socket_dir),
               "PATH": f"{server._bin}:{os.environ['PATH']}"}
        result = subprocess.run(["sh", str(REPO / "deploy" / "postgres-init.sh")], env=env,
                                capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 0, result.stderr
        with psycopg.connect(host=str(server.socket_dir), user="postgres",
                             dbname="grove") as conn:
            rows = conn.execute(
                "SELECT rolname, rolsuper, rolbypassrls, rolcanlogin, rolpassword IS NOT NULL "
                "FROM pg_authid WHERE rolname IN ('grove', 'grove_owner')").fetchall()
            roles = {name: tuple(flags) for name, *flags in rows}
            assert roles == {"grove": (False, False, True, True),
                             "grove_owner": (False, False, True, True)}
            owner = conn.execute("SELECT pg_get_userbyid(datdba) FROM pg_database "
                                 "WHERE datname = 'grove'").fetchone()
            assert owner == ("grove_owner",)
            assert conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()
    finally:
        server.release()


def test_compose_accepts_the_file():
    env = {"GROVE_DB_OWNER_PASSWORD": "o", "GROVE_DB_PASSWORD": "r", "GROVE_SECRET_KEY": "s",
           "PATH": "/usr/local/bin:/usr/bin:/bin"}
    if shutil.which("docker") and subprocess.run(
            ["docker", "compose", "version"], capture_output=True, check=False).returncode == 0:
        command = ["docker", "compose"]
    else:
        command = [require_program("docker-compose")]
    result = subprocess.run([*command, "-f", str(COMPOSE), "config", "--quiet"], env=env,
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr


def test_grove_services_reach_a_model_on_the_docker_host(compose):
    """Inside a container 127.0.0.1 is the container: a model served on the host (Ollama)
    is `host.docker.internal`, which Linux's Docker knows only through `host-gateway`."""
    for name in GROVE_SERVICES:
        assert "host.docker.internal:host-gateway" in compose["services"][name]["extra_hosts"]


def _example_settings() -> tuple[set[str], set[str]]:
    """The names `.env.example` sets, and those it shows commented out."""
    import re

    text = (REPO / ".env.example").read_text()
    return (set(re.findall(r"^([A-Z][A-Z0-9_]*)=", text, re.M)),
            set(re.findall(r"^# ([A-Z][A-Z0-9_]*)=", text, re.M)))


def test_the_env_example_names_every_setting_compose_reads():
    import re

    text = COMPOSE.read_text()
    read = set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)", text))
    required = set(re.findall(r"\$\{([A-Z][A-Z0-9_]*):\?", text))
    assert required, "compose.yaml requires nothing?"
    named, commented = _example_settings()
    assert required <= named  # to be filled in, not left commented out
    assert read <= named | commented
    assert (named | commented) <= read  # nothing compose would not pass on
    assert ".env" in (REPO / ".gitignore").read_text().split()


def test_the_compose_docs_say_how_to_start():
    """README's compose section: the settings file, where the owner is created, a model on
    the Docker host, and the reverse-proxy examples in deploy/."""
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Deployment with `compose.yaml`", 1)[1].split("\n## ", 1)[0]
    for needed in (".env.example", "/setup/", "host.docker.internal", "host-gateway",
                   "(deploy/)"):
        assert needed in section, needed
