"""Configuration: environment over grove.toml, the generated secret key, and one clear
line for every misconfiguration (SPEC §2)."""

import os
import stat

import pytest

from grove.runtime import config
from grove.runtime.config import ConfigError


@pytest.fixture
def home(tmp_path, monkeypatch):
    for name in config.SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GROVE_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_defaults_are_the_embedded_database(home):
    cfg = config.load()
    assert cfg.home == home and cfg.embedded
    assert cfg.database["USER"] == "grove" and cfg.migrate_database["USER"] == "grove_owner"
    assert cfg.database["HOST"] == str(home / "db")
    assert (cfg.embeddings, cfg.llm_model, cfg.redis_url) == ("local", None, None)
    assert stat.S_IMODE(home.stat().st_mode) & 0o077 == 0


def test_secret_key_is_generated_once_with_mode_0600(home):
    first = config.load().secret_key
    path = home / "secret_key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(first) >= 50
    assert config.load().secret_key == first
    path.chmod(0o644)  # loosened by hand: tightened again
    assert config.load().secret_key == first
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_toml_file_and_environment_precedence(home, monkeypatch):
    home.mkdir()
    (home / "grove.toml").write_text(
        'base_url = "https://notes.example.org"\nembeddings = "disabled"\n'
        'llm_model = "from-file"\n'
    )
    cfg = config.load()
    assert (cfg.base_url, cfg.embeddings, cfg.llm_model) == (
        "https://notes.example.org", "disabled", "from-file")
    assert "notes.example.org" in cfg.allowed_hosts
    monkeypatch.setenv("GROVE_LLM_MODEL", "from-env")
    assert config.load().llm_model == "from-env"
    assert config.load().sources["GROVE_LLM_MODEL"] == "GROVE_LLM_MODEL"


def test_the_metrics_token_has_at_least_32_characters(home, monkeypatch):
    assert config.METRICS_TOKEN_MIN_CHARS == 32
    monkeypatch.setenv("GROVE_METRICS_TOKEN", "t" * 31)
    with pytest.raises(ConfigError, match=r"^GROVE_METRICS_TOKEN: must be at least 32 "):
        config.load()
    monkeypatch.setenv("GROVE_METRICS_TOKEN", "t" * 32)
    assert config.load().metrics_token == "t" * 32


def test_database_url_switches_off_the_embedded_server(home, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgresql://app:pw@db.internal:6543/grove")
    monkeypatch.setenv("GROVE_MIGRATE_DATABASE_URL", "postgresql://owner:pw@db.internal/grove")
    cfg = config.load()
    assert not cfg.embedded
    assert (cfg.database["HOST"], cfg.database["PORT"], cfg.database["USER"]) == (
        "db.internal", 6543, "app")
    assert cfg.migrate_database["USER"] == "owner"


BAD = [
    ({"DATABASE_URL": "not a url"}, "DATABASE_URL: not a URL"),
    ({"DATABASE_URL": "mysql://u@h/db"}, "DATABASE_URL: Grove needs PostgreSQL"),
    ({"DATABASE_URL": "postgresql://u@h"}, "DATABASE_URL: names no database"),
    ({"GROVE_MIGRATE_DATABASE_URL": "postgresql://u@h/db"}, "GROVE_MIGRATE_DATABASE_URL"),
    ({"OPENAI_APPS_CHALLENGE": "has space"}, "OPENAI_APPS_CHALLENGE: must not contain"),
    ({"OPENAI_APPS_CHALLENGE": "x" * 513}, "OPENAI_APPS_CHALLENGE: longer than 512"),
    ({"GROVE_EMBEDDINGS": "magic"}, "GROVE_EMBEDDINGS: 'magic' is not one of"),
    ({"GROVE_BASE_URL": "ftp://x"}, "GROVE_BASE_URL"),
    ({"REDIS_URL": "http://x"}, "REDIS_URL"),
    ({"GROVE_LLM_BASE_URL": "localhost:8080"}, "GROVE_LLM_BASE_URL"),
    ({"GROVE_SECRET_KEY": "short"}, "GROVE_SECRET_KEY: must be at least 32"),
    ({"GROVE_DEBUG": "perhaps"}, "GROVE_DEBUG"),
    ({"GROVE_JOB_LEASE_SECONDS": "2"}, "GROVE_JOB_LEASE_SECONDS: '2' is not a whole number"),
    ({"GROVE_JOB_LEASE_SECONDS": "soon"}, "GROVE_JOB_LEASE_SECONDS"),
    ({"GROVE_NOTE_MAX_CHARS": "1000001"},
     "GROVE_NOTE_MAX_CHARS: '1000001' is not a whole number from 6000 to 1000000"),
    ({"GROVE_NOTE_MAX_CHARS": "5999"}, "GROVE_NOTE_MAX_CHARS: '5999'"),
    ({"GROVE_LLM_TIMEOUT": "soon"}, "GROVE_LLM_TIMEOUT: 'soon' is not a number of seconds "
                                    "from 1 to 3600"),
    ({"GROVE_LLM_TIMEOUT": "0"}, "GROVE_LLM_TIMEOUT: '0' is not a number of seconds"),
    ({"GROVE_LLM_TIMEOUT": "nan"}, "GROVE_LLM_TIMEOUT: 'nan' is not a number of seconds"),
    ({"GROVE_LLM_TIMEOUT": "86400"}, "GROVE_LLM_TIMEOUT: '86400' is not"),
    ({"GROVE_MODEL_CALLS_PER_CONNECTION": "-1"},
     "GROVE_MODEL_CALLS_PER_CONNECTION: '-1' is not a number of model calls a minute"),
    ({"GROVE_MODEL_CALLS_PER_ACCOUNT": "lots"}, "GROVE_MODEL_CALLS_PER_ACCOUNT: 'lots'"),
    ({"GROVE_TRUSTED_PROXIES": "127.0.0.1, caddy"},
     "GROVE_TRUSTED_PROXIES: 'caddy' is not an IP address or network"),
    ({"GROVE_TRUSTED_PROXIES": "0.0.0.0/0"}, "GROVE_TRUSTED_PROXIES: '0.0.0.0/0' trusts every"),
    ({"GROVE_FORWARDED_HEADER": "True-Client-IP"},
     "GROVE_FORWARDED_HEADER: 'True-Client-IP' is not one of X-Forwarded-For, X-Real-IP"),
]


@pytest.mark.parametrize(("env", "message"), BAD)
def test_misconfiguration_is_one_line_naming_the_setting(home, monkeypatch, env, message):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as err:
        config.load()
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_trusted_proxies_from_the_file_or_the_environment(home, monkeypatch):
    assert (config.load().trusted_proxies, config.load().forwarded_header) == (
        (), "x-forwarded-for")
    home.mkdir(exist_ok=True)
    (home / "grove.toml").write_text('trusted_proxies = "127.0.0.1, 172.18.0.0/16"\n'
                                     'forwarded_header = "X-Real-IP"\n')
    cfg = config.load()
    assert (cfg.trusted_proxies, cfg.forwarded_header) == (
        ("127.0.0.1/32", "172.18.0.0/16"), "x-real-ip")
    monkeypatch.setenv("GROVE_TRUSTED_PROXIES", "::1")
    assert config.load().trusted_proxies == ("::1/128",)


def test_bad_toml_is_reported(home):
    home.mkdir()
    (home / "grove.toml").write_text("base_url = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        config.load()
    (home / "grove.toml").write_text('databse_url = "postgresql://x/y"\n')
    with pytest.raises(ConfigError, match="unknown setting 'databse_url'"):
        config.load()


def test_challenge_token_at_the_limit_is_accepted(home, monkeypatch):
    monkeypatch.setenv("OPENAI_APPS_CHALLENGE", "t" * 512)
    assert config.load().openai_apps_challenge == "t" * 512


def test_default_home_depends_on_who_runs_grove(monkeypatch):
    monkeypatch.delenv("GROVE_HOME", raising=False)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert config.grove_home() == config.ROOT_DEFAULT_HOME
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert config.grove_home() == config.Path.home() / ".grove"


def test_model_call_settings_come_from_grove_toml_as_numbers_or_text(home, monkeypatch):
    """GROVE_LLM_TIMEOUT and the model-call budgets (issue 36 items 2.3 and 3.7): the
    documented defaults, then grove.toml — a TOML number as readily as a string — and
    the environment over it."""
    cfg = config.load()
    assert (cfg.llm_timeout, cfg.model_calls_per_connection,
            cfg.model_calls_per_account) == (60.0, 10, 30)
    (home / "grove.toml").write_text('llm_timeout = 300\nmodel_calls_per_connection = "0"\n'
                                     "model_calls_per_account = 100\n")
    cfg = config.load()
    assert (cfg.llm_timeout, cfg.model_calls_per_connection,
            cfg.model_calls_per_account) == (300.0, 0, 100)
    assert cfg.sources["GROVE_LLM_TIMEOUT"].endswith("grove.toml (llm_timeout)")
    monkeypatch.setenv("GROVE_LLM_TIMEOUT", "2.5")
    assert config.load().llm_timeout == 2.5
    (home / "grove.toml").write_text("llm_timeout = [1]\n")
    with pytest.raises(ConfigError, match="'llm_timeout' must be a string, a number or"):
        config.load()


def test_the_document_limit_is_set_and_the_body_limit_follows_it(home, monkeypatch):
    """GROVE_NOTE_MAX_CHARS (SPEC §3: 200,000 unless set, at most 1,000,000)."""
    assert config.load().note_max_chars == 200_000
    monkeypatch.setenv("GROVE_NOTE_MAX_CHARS", "1000000")
    assert config.load().note_max_chars == 1_000_000
