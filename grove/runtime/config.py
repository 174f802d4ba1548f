"""Grove's configuration: environment variables win over `$GROVE_HOME/grove.toml`.

Everything that can be wrong with the configuration is found here, before Django
starts, and reported as one `ConfigError` line that names the setting (SPEC §2).
The CLI prints that line and exits non-zero; nothing else should catch it.
"""

from __future__ import annotations

import os
import secrets
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import dj_database_url

from grove.kernel.addresses import LOOPBACK_NAMES, parse_header, parse_proxies
from grove.kernel.errors import ConfigError

# Environment variable → key in grove.toml.
SETTINGS: dict[str, str] = {
    "DATABASE_URL": "database_url",
    "GROVE_MIGRATE_DATABASE_URL": "migrate_database_url",
    "REDIS_URL": "redis_url",
    "GROVE_SECRET_KEY": "secret_key",
    "GROVE_BASE_URL": "base_url",
    "GROVE_EMBEDDINGS": "embeddings",
    "GROVE_EMBEDDINGS_MODEL": "embeddings_model",
    "GROVE_EMBEDDINGS_BASE_URL": "embeddings_base_url",
    "GROVE_EMBEDDINGS_API_KEY": "embeddings_api_key",
    "GROVE_EMBEDDINGS_DIMENSION": "embeddings_dimension",
    "GROVE_LLM_BASE_URL": "llm_base_url",
    "GROVE_LLM_API_KEY": "llm_api_key",
    "GROVE_LLM_MODEL": "llm_model",
    "OPENAI_APPS_CHALLENGE": "openai_apps_challenge",
    "GROVE_DEBUG": "debug",
    "GROVE_API_RATE_LIMIT": "api_rate_limit",
    "GROVE_PUBLIC_RATE_LIMIT": "public_rate_limit",
    "GROVE_ADDRESS_RATE_LIMIT": "address_rate_limit",
    "GROVE_MAX_CONCURRENT_REQUESTS": "max_concurrent_requests",
    "GROVE_DB_POOL_SIZE": "db_pool_size",
    "GROVE_METRICS_TOKEN": "metrics_token",
    "GROVE_JOB_LEASE_SECONDS": "job_lease_seconds",
    "GROVE_NOTE_MAX_CHARS": "note_max_chars",
    "GROVE_TRUSTED_PROXIES": "trusted_proxies",
    "GROVE_FORWARDED_HEADER": "forwarded_header",
}

# Ask's model calls (ask.providers, ask.services.budget): how long one may take, and how
# many a connection and an account may make a minute, counted before each call.
MODEL_SETTINGS: dict[str, str] = {
    "GROVE_LLM_TIMEOUT": "llm_timeout",
    "GROVE_MODEL_CALLS_PER_CONNECTION": "model_calls_per_connection",
    "GROVE_MODEL_CALLS_PER_ACCOUNT": "model_calls_per_account",
}
SETTINGS.update(MODEL_SETTINGS)
LLM_TIMEOUT_RANGE = (1.0, 3600.0)  # seconds
MODEL_CALLS_DEFAULTS = {"GROVE_MODEL_CALLS_PER_CONNECTION": 10,
                        "GROVE_MODEL_CALLS_PER_ACCOUNT": 30}  # a minute; 0 = no limit

EMBEDDING_PROVIDERS = ("local", "openai", "disabled")
CHALLENGE_MAX_CHARS = 512
METRICS_TOKEN_MIN_CHARS = 32  # a guessable token would open /metrics to anyone
ROOT_DEFAULT_HOME = Path("/var/lib/grove")


@dataclass(frozen=True)
class Config:
    home: Path
    secret_key: str
    # Runtime database (RLS-bound role) and migration database (table owner).
    database: dict[str, Any]
    migrate_database: dict[str, Any]
    migrate_configured: bool
    embedded: bool
    base_url: str
    redis_url: str | None
    embeddings: str
    embeddings_model: str | None
    embeddings_base_url: str | None
    embeddings_api_key: str | None
    embeddings_dimension: int | None
    llm_base_url: str | None
    llm_api_key: str | None
    llm_model: str | None
    openai_apps_challenge: str | None
    debug: bool
    # REST/MCP requests per minute per connection (0 = no limit).
    api_rate_limit: int = 600
    public_rate_limit: int = 120
    # Requests per minute per client address, before authentication (0 = no limit).
    address_rate_limit: int = 1200
    # Requests running inside Django at once per web process (the rest wait their turn).
    max_concurrent_requests: int = 16
    # Database connections per process (0 = no pool: a connection per request).
    db_pool_size: int = 16
    # The bearer token Prometheus sends to /metrics (unset: /metrics answers 404).
    metrics_token: str | None = None
    # How long a worker may hold a job before `recover` hands it to another (a worker
    # killed mid-job holds its jobs this long); a handler may set its own.
    job_lease_seconds: int = 120
    # The most characters a document note (kind `note`) holds; memory records hold 6,000.
    note_max_chars: int = 200_000
    # Model calls: seconds one may take (a try; the client retries twice), and how many
    # a connection and an account may make a minute (0 = no limit).
    llm_timeout: float = 60.0
    model_calls_per_connection: int = 10
    model_calls_per_account: int = 30
    # Reverse proxies whose forwarded header names the client (grove.kernel.addresses):
    # networks in normal form, and the header's name in lower case.
    trusted_proxies: tuple[str, ...] = ()
    forwarded_header: str = "x-forwarded-for"
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def origins(self) -> tuple[str, ...]:
        """The base URL's origin first; for a loopback base URL also its loopback
        siblings (127.0.0.1, localhost, [::1] on the same scheme and port)."""
        base = self.base_url.rstrip("/")
        parts = urlsplit(base)
        if parts.hostname not in LOOPBACK_NAMES or parts.path:
            return (base,)
        port = f":{parts.port}" if parts.port else ""
        siblings = [f"{parts.scheme}://{host}{port}" for host in ("127.0.0.1", "localhost",
                                                                 "[::1]")]
        return (base, *(origin for origin in siblings if origin != base))

    @property
    def allowed_hosts(self) -> list[str]:
        hosts = ["localhost", "127.0.0.1", "[::1]"]
        host = urlsplit(self.base_url).hostname
        if host and host not in hosts:
            hosts.append(host)
        return hosts


def default_home() -> Path:
    """`~/.grove`, except as root: the embedded server then runs as an unprivileged
    OS user that must be able to enter the data folder, and a root home folder is
    (rightly) private. `/var/lib/grove` needs no loosening of any parent folder."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return ROOT_DEFAULT_HOME
    return Path.home() / ".grove"


def grove_home() -> Path:
    raw = os.environ.get("GROVE_HOME")
    return Path(raw).expanduser().absolute() if raw else default_home()


def _read_toml(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from None
    known = set(SETTINGS.values())
    for key, value in data.items():
        if key not in known:
            raise ConfigError(
                f"{path}: unknown setting {key!r} (known: {', '.join(sorted(known))})"
            )
        if not isinstance(value, str | bool | int | float):
            raise ConfigError(f"{path}: setting {key!r} must be a string, a number or "
                              "true/false")
    return data


def _raw_settings(home: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Merge file and environment; return values and where each came from."""
    toml_path = home / "grove.toml"
    file_values = _read_toml(toml_path)
    values: dict[str, str] = {}
    sources: dict[str, str] = {}
    for env_name, key in SETTINGS.items():
        if key in file_values:
            value = file_values[key]
            values[env_name] = str(value).lower() if isinstance(value, bool) else str(value)
            sources[env_name] = f"{toml_path} ({key})"
        env_value = os.environ.get(env_name)
        if env_value is not None and env_value != "":
            values[env_name] = env_value
            sources[env_name] = env_name
    return values, sources


def _ensure_home(home: Path) -> None:
    try:
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise ConfigError(f"GROVE_HOME {home}: cannot be created ({exc.strerror})") from None
    if not home.is_dir():
        raise ConfigError(f"GROVE_HOME {home}: is not a folder")


def _secret_key(home: Path, values: dict[str, str]) -> str:
    if values.get("GROVE_SECRET_KEY"):
        key = values["GROVE_SECRET_KEY"]
        if len(key) < 32:
            raise ConfigError("GROVE_SECRET_KEY: must be at least 32 characters long")
        return key
    path = home / "secret_key"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        try:
            if stat.S_IMODE(path.stat().st_mode) & 0o077:
                path.chmod(0o600)
            key = path.read_text().strip()
        except OSError as exc:
            raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from None
        if len(key) < 32:
            message = f"{path}: the stored secret key is damaged; remove the file"
            raise ConfigError(message) from None
        return key
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be written ({exc.strerror})") from None
    key = secrets.token_urlsafe(50)
    with os.fdopen(fd, "w") as fh:
        fh.write(key + "\n")
    return key


def _parse_database_url(setting: str, url: str) -> dict[str, Any]:
    if "://" not in url:
        raise ConfigError(f"{setting}: not a URL (expected postgresql://user:pass@host:port/db)")
    scheme = url.split("://", 1)[0]
    if scheme not in ("postgres", "postgresql", "pgsql"):
        raise ConfigError(
            f"{setting}: Grove needs PostgreSQL with pgvector, not {scheme!r} "
            "(expected postgresql://user:pass@host:port/db)"
        )
    try:
        parsed = dj_database_url.parse(url, conn_max_age=0)
    except (ValueError, KeyError) as exc:
        raise ConfigError(f"{setting}: cannot be parsed ({exc})") from None
    if not parsed.get("NAME"):
        raise ConfigError(f"{setting}: names no database (expected .../dbname)")
    parsed["ENGINE"] = "django.db.backends.postgresql"
    return dict(parsed)


def _check_url(setting: str, url: str, schemes: tuple[str, ...]) -> str:
    parts = urlsplit(url)
    if parts.scheme not in schemes or not parts.netloc:
        raise ConfigError(f"{setting}: {url!r} is not a {'/'.join(schemes)} URL")
    return url


def _model_settings(values: dict[str, str]) -> dict[str, Any]:
    """GROVE_LLM_TIMEOUT (seconds, 1–3600; default 60) and the model-call budgets (whole
    numbers a minute, 0 = no limit), as `Config` fields."""
    raw = values.get("GROVE_LLM_TIMEOUT", "60")
    low, high = LLM_TIMEOUT_RANGE
    try:
        timeout = float(raw)
    except ValueError:
        timeout = float("nan")
    if not low <= timeout <= high:  # (NaN and infinity fail here too)
        raise ConfigError(f"GROVE_LLM_TIMEOUT: {raw!r} is not a number of seconds from "
                          f"{low:g} to {high:g}")
    found: dict[str, Any] = {"llm_timeout": timeout}
    for name, default in MODEL_CALLS_DEFAULTS.items():
        raw = values.get(name, str(default))
        if not raw.isascii() or not raw.isdigit() or int(raw) > 1_000_000:
            raise ConfigError(f"{name}: {raw!r} is not a number of model calls a minute "
                              "(0 turns the limit off)")
        found[MODEL_SETTINGS[name]] = int(raw)
    return found


def load(*, create_home: bool = True) -> Config:
    """Read and validate the whole configuration. Raises `ConfigError`."""
    home = grove_home()
    if create_home:
        _ensure_home(home)
    values, sources = _raw_settings(home)

    challenge = values.get("OPENAI_APPS_CHALLENGE")
    if challenge is not None:
        if len(challenge) > CHALLENGE_MAX_CHARS:
            raise ConfigError(
                f"OPENAI_APPS_CHALLENGE: longer than {CHALLENGE_MAX_CHARS} characters"
            )
        if any(ch.isspace() for ch in challenge) or not challenge.isprintable():
            raise ConfigError("OPENAI_APPS_CHALLENGE: must not contain whitespace")

    embeddings = values.get("GROVE_EMBEDDINGS", "local")
    if embeddings not in EMBEDDING_PROVIDERS:
        raise ConfigError(
            f"GROVE_EMBEDDINGS: {embeddings!r} is not one of {', '.join(EMBEDDING_PROVIDERS)}"
        )

    embeddings_model = values.get("GROVE_EMBEDDINGS_MODEL")
    embeddings_base_url = values.get("GROVE_EMBEDDINGS_BASE_URL") or values.get(
        "GROVE_LLM_BASE_URL")
    embeddings_dimension: int | None = None
    if embeddings == "local" and embeddings_model is not None:
        from grove.embeddings.catalog import VARIANTS

        if embeddings_model not in VARIANTS:
            raise ConfigError(
                f"GROVE_EMBEDDINGS_MODEL: {embeddings_model!r} is not a local model "
                f"(one of {', '.join(VARIANTS)})"
            )
    if embeddings == "openai":
        if not embeddings_base_url:
            raise ConfigError("GROVE_EMBEDDINGS_BASE_URL: required with GROVE_EMBEDDINGS=openai "
                              "(or set GROVE_LLM_BASE_URL)")
        _check_url("GROVE_EMBEDDINGS_BASE_URL", embeddings_base_url, ("http", "https"))
        if not embeddings_model:
            raise ConfigError("GROVE_EMBEDDINGS_MODEL: required with GROVE_EMBEDDINGS=openai")
        raw_dimension = values.get("GROVE_EMBEDDINGS_DIMENSION", "")
        if not raw_dimension.isdigit() or not 1 <= int(raw_dimension) <= 16000:
            raise ConfigError("GROVE_EMBEDDINGS_DIMENSION: required with GROVE_EMBEDDINGS=openai "
                              "(a whole number of dimensions, 1–16000)")
        embeddings_dimension = int(raw_dimension)

    base_url = _check_url(
        "GROVE_BASE_URL", values.get("GROVE_BASE_URL", "http://127.0.0.1:8000"), ("http", "https")
    ).rstrip("/")
    redis_url = values.get("REDIS_URL")
    if redis_url:
        _check_url("REDIS_URL", redis_url, ("redis", "rediss", "unix"))
    llm_base_url = values.get("GROVE_LLM_BASE_URL")
    if llm_base_url:
        _check_url("GROVE_LLM_BASE_URL", llm_base_url, ("http", "https"))

    debug_raw = values.get("GROVE_DEBUG", "false").lower()
    if debug_raw not in ("1", "0", "true", "false", "yes", "no"):
        raise ConfigError(f"GROVE_DEBUG: {debug_raw!r} is not true or false")

    rates = {}
    for name, default in (("GROVE_API_RATE_LIMIT", "600"), ("GROVE_PUBLIC_RATE_LIMIT", "120"),
                          ("GROVE_ADDRESS_RATE_LIMIT", "1200")):
        raw_rate = values.get(name, default)
        if not raw_rate.isdigit() or int(raw_rate) > 1_000_000:
            raise ConfigError(f"{name}: {raw_rate!r} is not a number of requests per "
                              "minute (0 turns the limit off)")
        rates[name] = int(raw_rate)
    sizes = {}
    for name, default, low, high in (("GROVE_MAX_CONCURRENT_REQUESTS", "16", 1, 1000),
                                     ("GROVE_DB_POOL_SIZE", "16", 0, 500),
                                     ("GROVE_JOB_LEASE_SECONDS", "120", 5, 86400),
                                     ("GROVE_NOTE_MAX_CHARS", "200000", 6000, 1_000_000)):
        raw_size = values.get(name, default)
        if not raw_size.isdigit() or not low <= int(raw_size) <= high:
            raise ConfigError(f"{name}: {raw_size!r} is not a whole number from {low} to "
                              f"{high}")
        sizes[name] = int(raw_size)

    metrics_token = values.get("GROVE_METRICS_TOKEN") or None
    if metrics_token is not None and (
            len(metrics_token) < METRICS_TOKEN_MIN_CHARS
            or not all("!" <= ch <= "~" for ch in metrics_token)):
        raise ConfigError(f"GROVE_METRICS_TOKEN: must be at least {METRICS_TOKEN_MIN_CHARS} "
                          "characters of printable ASCII without spaces (it travels in an "
                          "Authorization header)")

    try:
        trusted_proxies = parse_proxies(values.get("GROVE_TRUSTED_PROXIES", ""))
    except ValueError as exc:
        raise ConfigError(f"GROVE_TRUSTED_PROXIES: {exc}") from None
    try:
        forwarded_header = parse_header(values.get("GROVE_FORWARDED_HEADER",
                                                   "X-Forwarded-For"))
    except ValueError as exc:
        raise ConfigError(f"GROVE_FORWARDED_HEADER: {exc}") from None

    if values.get("DATABASE_URL"):
        embedded = False
        database = _parse_database_url("DATABASE_URL", values["DATABASE_URL"])
        # Without an owner URL nothing can be migrated (the runtime role must not own
        # the tables); the runtime settings stand in so Django has a complete alias.
        migrate_configured = bool(values.get("GROVE_MIGRATE_DATABASE_URL"))
        migrate_database = (
            _parse_database_url("GROVE_MIGRATE_DATABASE_URL",
                                values["GROVE_MIGRATE_DATABASE_URL"])
            if migrate_configured else dict(database)
        )
    else:
        if values.get("GROVE_MIGRATE_DATABASE_URL"):
            raise ConfigError("GROVE_MIGRATE_DATABASE_URL: set DATABASE_URL as well, or neither")
        from grove.runtime import embedded as embedded_pg

        embedded = True
        migrate_configured = True
        database = embedded_pg.database_settings(home, role=embedded_pg.RUNTIME_ROLE)
        migrate_database = embedded_pg.database_settings(home, role=embedded_pg.OWNER_ROLE)

    secret_key = _secret_key(home, values) if create_home else values.get("GROVE_SECRET_KEY", "")

    return Config(
        home=home,
        secret_key=secret_key,
        database=database,
        migrate_database=migrate_database,
        migrate_configured=migrate_configured,
        embedded=embedded,
        base_url=base_url,
        redis_url=redis_url,
        embeddings=embeddings,
        embeddings_model=embeddings_model,
        embeddings_base_url=embeddings_base_url,
        embeddings_api_key=values.get("GROVE_EMBEDDINGS_API_KEY") or values.get(
            "GROVE_LLM_API_KEY"),
        embeddings_dimension=embeddings_dimension,
        llm_base_url=llm_base_url,
        llm_api_key=values.get("GROVE_LLM_API_KEY"),
        llm_model=values.get("GROVE_LLM_MODEL"),
        openai_apps_challenge=challenge,
        debug=debug_raw in ("1", "true", "yes"),
        api_rate_limit=rates["GROVE_API_RATE_LIMIT"],
        public_rate_limit=rates["GROVE_PUBLIC_RATE_LIMIT"],
        address_rate_limit=rates["GROVE_ADDRESS_RATE_LIMIT"],
        max_concurrent_requests=sizes["GROVE_MAX_CONCURRENT_REQUESTS"],
        note_max_chars=sizes["GROVE_NOTE_MAX_CHARS"],
        db_pool_size=sizes["GROVE_DB_POOL_SIZE"],
        job_lease_seconds=sizes["GROVE_JOB_LEASE_SECONDS"],
        metrics_token=metrics_token,
        **_model_settings(values),
        trusted_proxies=trusted_proxies,
        forwarded_header=forwarded_header,
        sources=sources,
    )
