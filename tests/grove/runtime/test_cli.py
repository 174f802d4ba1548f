"""The `grove` command refuses bad configuration with one clear line, a non-zero exit
status and no traceback — including privileged database credentials (SPEC §2, §5)."""

import psycopg
import pytest
from django.conf import settings

from tests.conftest import IN_CI
from tests.grove.runtime.processes import run_grove

pytestmark = pytest.mark.slow


def assert_one_line_refusal(result, expected: str) -> None:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("grove: error: ")
    assert expected in lines[0]


@pytest.mark.parametrize(("env", "expected"), [
    ({"DATABASE_URL": "this is not a url"}, "DATABASE_URL: not a URL"),
    ({"DATABASE_URL": "sqlite:///grove.db"}, "Grove needs PostgreSQL"),
    ({"DATABASE_URL": "postgresql://grove:pw@127.0.0.1:9/grove"}, "cannot connect"),
    ({"OPENAI_APPS_CHALLENGE": "two words"}, "OPENAI_APPS_CHALLENGE"),
    ({"GROVE_EMBEDDINGS": "gpu"}, "GROVE_EMBEDDINGS"),
])
def test_misconfiguration(tmp_path, env, expected):
    result = run_grove("check", home=tmp_path / "home", **env)
    assert_one_line_refusal(result, expected)


def test_serve_refuses_misconfiguration_too(tmp_path):
    result = run_grove("serve", home=tmp_path / "home",
                       DATABASE_URL="postgresql://grove:pw@127.0.0.1:9/grove")
    assert_one_line_refusal(result, "cannot connect")


def _test_database_url(role: str) -> str:
    db = settings.DATABASES["default"]
    return f"postgresql://{role}@/{db['NAME']}?host={db['HOST']}&port={db['PORT']}"


@pytest.mark.parametrize(("role", "expected"), [
    ("postgres", "is a superuser"),
    ("grove_owner", "owns (or inherits ownership of)"),
])
def test_privileged_runtime_credentials_are_refused(django_db_setup, tmp_path, role, expected):
    if not settings.GROVE_EMBEDDED_DB:
        pytest.skip("needs the embedded test server's superuser and owner roles")
    result = run_grove("check", home=tmp_path / "home", DATABASE_URL=_test_database_url(role))
    assert_one_line_refusal(result, expected)
    assert "refusing to run with privileged credentials" in result.stderr


def test_bypassrls_runtime_credentials_are_refused(django_db_setup, tmp_path):
    if not settings.GROVE_EMBEDDED_DB:
        pytest.skip("needs the embedded test server's superuser to create the role")
    db = settings.DATABASES["default"]
    admin = dict(host=db["HOST"], port=db["PORT"], user="postgres", dbname=db["NAME"],
                 autocommit=True)
    with psycopg.connect(**admin) as conn:
        conn.execute("DROP ROLE IF EXISTS grove_bypass")
        conn.execute("CREATE ROLE grove_bypass LOGIN NOSUPERUSER BYPASSRLS")
    try:
        result = run_grove("check", home=tmp_path / "home",
                           DATABASE_URL=_test_database_url("grove_bypass"))
        assert_one_line_refusal(result, "has BYPASSRLS")
    finally:
        with psycopg.connect(**admin) as conn:
            conn.execute("DROP ROLE grove_bypass")


def test_runtime_credentials_are_accepted_and_nothing_is_embedded(django_db_setup, tmp_path):
    if not settings.GROVE_EMBEDDED_DB:
        pytest.skip("needs the embedded test server")
    home = tmp_path / "home"
    # The SECRET_KEY the test database's keys were stored with (grove.kernel.tenancy).
    result = run_grove("check", home=home, DATABASE_URL=_test_database_url("grove"),
                       GROVE_SECRET_KEY=settings.SECRET_KEY)
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout
    assert not (home / "db").exists()  # DATABASE_URL set: no embedded server


SYSTEM_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"


def test_postgres_without_pgvector_is_refused(tmp_path):
    """This machine's Debian PostgreSQL has no pgvector: a real "wrong pgvector" server."""
    try:
        with psycopg.connect(SYSTEM_POSTGRES, connect_timeout=3) as conn:
            has_vector = conn.execute(
                "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
    except psycopg.OperationalError:
        if IN_CI:
            pytest.fail("CI=true: the machine's PostgreSQL on 127.0.0.1:5432 must be running")
        pytest.skip("no PostgreSQL on 127.0.0.1:5432 to test against")
    if has_vector:
        pytest.skip("the PostgreSQL on 127.0.0.1:5432 has pgvector: nothing to refuse")
    result = run_grove("check", home=tmp_path / "home", DATABASE_URL=SYSTEM_POSTGRES)
    assert_one_line_refusal(result, "pgvector extension is not available")


def test_migrating_needs_a_separate_owner_role(django_db_setup, tmp_path):
    if not settings.GROVE_EMBEDDED_DB:
        pytest.skip("needs the embedded test server")
    home = tmp_path / "home"
    runtime = _test_database_url("grove")
    missing = run_grove("migrate", home=home, DATABASE_URL=runtime)
    assert_one_line_refusal(missing, "GROVE_MIGRATE_DATABASE_URL: not set")
    same = run_grove("migrate", home=home, DATABASE_URL=runtime,
                     GROVE_MIGRATE_DATABASE_URL=runtime)
    assert_one_line_refusal(same, "names the same role as DATABASE_URL")
    serve = run_grove("serve", home=home, DATABASE_URL=runtime)
    assert_one_line_refusal(serve, "GROVE_MIGRATE_DATABASE_URL: not set")
    superuser = run_grove("migrate", home=home, DATABASE_URL=_test_database_url("postgres"),
                          GROVE_MIGRATE_DATABASE_URL=_test_database_url("grove_owner"))
    assert_one_line_refusal(superuser, "is a superuser")
    # With the test database's SECRET_KEY: a migrate stores the keys derived from it.
    ok = run_grove("migrate", home=home, DATABASE_URL=runtime,
                   GROVE_MIGRATE_DATABASE_URL=_test_database_url("grove_owner"),
                   GROVE_SECRET_KEY=settings.SECRET_KEY)
    assert ok.returncode == 0, ok.stderr
