"""Django settings, derived from `grove.runtime.config` (environment + `$GROVE_HOME/grove.toml`)."""

import os
from pathlib import Path

from django.conf import global_settings
from django.utils.csp import CSP

from grove.runtime.config import load
from grove.runtime.dbpool import check_idle_connection

CONFIG = load()

PACKAGE_DIR = Path(__file__).resolve().parent
SOURCE_DIR = PACKAGE_DIR.parent
# An installed wheel carries templates/ and static/ inside the grove package (see
# pyproject's force-include); in a source checkout they sit beside the packages.
SITE_DIR = PACKAGE_DIR / "_site" if (PACKAGE_DIR / "_site").is_dir() else SOURCE_DIR

SECRET_KEY = CONFIG.secret_key
DEBUG = CONFIG.debug
ALLOWED_HOSTS = CONFIG.allowed_hosts
GROVE_HOME = CONFIG.home
GROVE_BASE_URL = CONFIG.base_url
GROVE_EMBEDDED_DB = CONFIG.embedded
GROVE_MIGRATE_CONFIGURED = CONFIG.migrate_configured
OPENAI_APPS_CHALLENGE = CONFIG.openai_apps_challenge
GROVE_EMBEDDINGS = CONFIG.embeddings
GROVE_EMBEDDINGS_MODEL = CONFIG.embeddings_model
GROVE_EMBEDDINGS_BASE_URL = CONFIG.embeddings_base_url
GROVE_EMBEDDINGS_API_KEY = CONFIG.embeddings_api_key
GROVE_EMBEDDINGS_DIMENSION = CONFIG.embeddings_dimension
GROVE_LLM_BASE_URL = CONFIG.llm_base_url
GROVE_LLM_MODEL = CONFIG.llm_model
GROVE_LLM_API_KEY = CONFIG.llm_api_key
GROVE_LLM_TIMEOUT = CONFIG.llm_timeout
GROVE_MODEL_CALLS_PER_CONNECTION = CONFIG.model_calls_per_connection
GROVE_MODEL_CALLS_PER_ACCOUNT = CONFIG.model_calls_per_account

INSTALLED_APPS = [
    "grove",
    "passages",
    "links",
    "notebooks",
    "ask",
    "sharing",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "django_htmx",
    "oauth2_provider",
    "ninja",  # /v1/docs from ninja's own templates and static Swagger UI (no CDN)
]

MIDDLEWARE = [
    # Outermost, so a request's time in Django is all of it (grove_http_request_duration_seconds).
    "grove.interfaces.metrics.RequestMetricsMiddleware",
    "grove.interfaces.middleware.RequestIdMiddleware",
    "grove.interfaces.middleware.ApiMethodNotAllowedMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "grove.interfaces.middleware.TimeZoneMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "grove.interfaces.middleware.HtmxVaryMiddleware",
    "grove.identity.caller.ActorMiddleware",
    "grove.interfaces.middleware.WebErrorMiddleware",
]

ROOT_URLCONF = "grove.urls"
# Modules whose TOOLS (and RESOURCES, PROMPTS) are served over MCP, TOOLS also at
# POST /v1/tools/<name> (grove/interfaces/mcp.py, mcp_catalog.py), in this order.
GROVE_MCP_TOOL_MODULES = ["notebooks.mcp_context", "notebooks.mcp", "ask.mcp"]
# Request bodies (REST and forms; file uploads are separate): a loose outer limit (see
# notebooks/rules.py) that caps work while the services check the exact limits — 1 MiB,
# or room for the longest document note written in JSON's longest escapes (six bytes
# a character: "\u0001") when that is more. Larger → 413.
GROVE_API_MAX_BODY = DATA_UPLOAD_MAX_MEMORY_SIZE = max(
    1024 * 1024, CONFIG.note_max_chars * 6 + 64 * 1024)
# Both are enforced before Django reads a byte (grove/interfaces/limits.py): the import upload of a
# signed-in session may be larger.
GROVE_IMPORT_MAX_BODY = 256 * 1024 * 1024
# A folder uploaded for ingest arrives as one file per note (notebooks.services.ingest_upload
# caps an upload at 20,000); Django's default of 100 would refuse a small vault.
DATA_UPLOAD_MAX_NUMBER_FILES = 20_000
# Before authentication (grove/interfaces/limits.py): requests per minute per client address, and
# how many requests run inside Django at once in this process.
GROVE_ADDRESS_RATE_LIMIT = CONFIG.address_rate_limit
GROVE_MAX_CONCURRENT_REQUESTS = CONFIG.max_concurrent_requests
# The bearer token of Prometheus's scrapes of /metrics (grove/interfaces/metrics.py); unset,
# /metrics answers 404.
GROVE_METRICS_TOKEN = CONFIG.metrics_token
ASGI_APPLICATION = "grove.asgi.application"
AUTH_USER_MODEL = "grove.Account"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [SITE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.csp",
                "notebooks.context.sidebar",
            ],
        },
    },
]

# `default` is the runtime role: no superuser, no BYPASSRLS, owns nothing, so row-level
# security applies to every query. `owner` owns the schema and is used only to migrate.
# Connections name their process, so the embedded server's "last one out" rule can tell
# this process's own (e.g. worker threads') connections from other grove commands'.
_APPLICATION = {"application_name": f"grove-{os.getpid()}"}
DATABASES = {
    alias: {**db, "CONN_MAX_AGE": 0, "OPTIONS": {**db.get("OPTIONS", {}), **_APPLICATION}}
    for alias, db in (("default", CONFIG.database), ("owner", CONFIG.migrate_database))
}
# The runtime role's connections come from a pool (psycopg_pool through Django): at most
# GROVE_DB_POOL_SIZE per process, well below the server's max_connections (200 for the
# embedded one), so a flood of requests waits for a connection (up to 20 s, then 503)
# instead of exhausting the server's and failing everyone. A pooled connection is checked
# before it is handed out, so a restarted database server is reconnected to at once —
# without a round trip unless its socket says the server has spoken (grove/runtime/dbpool.py).
GROVE_DB_POOL_TIMEOUT = 20
if CONFIG.db_pool_size:
    DATABASES["default"]["OPTIONS"]["pool"] = {
        "min_size": 1, "max_size": CONFIG.db_pool_size, "timeout": GROVE_DB_POOL_TIMEOUT,
        "max_idle": 60, "check": check_idle_connection}
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# People's passwords: Django's hashers, the first of them (PBKDF2) for every new hash. The
# last is for OAuth client secrets only, named by OAUTH2_PROVIDER's CLIENT_SECRET_HASHER:
# one round, since a client secret is drawn by the server, not chosen by a person
# (grove/identity/client_secrets.py says why that is as strong). It must never come first.
PASSWORD_HASHERS = [*global_settings.PASSWORD_HASHERS,
                    "grove.identity.client_secrets.ClientSecretHasher"]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [SITE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Serve straight from the finders: `grove serve` needs no collectstatic step.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# Django's database sessions, the row keyed by a MAC of the cookie rather than the cookie
# itself: the table is readable by the runtime database role (grove/identity/sessions.py).
SESSION_ENGINE = "grove.identity.sessions"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
CSRF_TRUSTED_ORIGINS = list(CONFIG.origins)
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
# Nothing inline runs: scripts and styles come only from Grove's own static files (htmx
# is configured by a <meta> tag, with eval and its injected indicator styles off), and
# no page may be framed. Rendered notes carry no style attributes (see rendering.py).
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],  # never a remote image: no page calls out by itself
    "connect-src": [CSP.SELF],
    "font-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}
# Behind HTTPS (GROVE_BASE_URL https://…) TLS ends at a reverse proxy that sets
# X-Forwarded-Proto (see README, "Deploying"): cookies are Secure, plain HTTP redirects to
# HTTPS, and browsers are told to stay on HTTPS for a year. The health checks and
# /metrics are exempt so a load balancer or Prometheus can reach a process over plain HTTP.
HTTPS = CONFIG.base_url.startswith("https://")
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = HTTPS
if HTTPS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
    SECURE_HSTS_SECONDS = 365 * 24 * 3600
# includeSubDomains and preload would bind every sibling host of a self-hosted domain
# to HTTPS; that is the domain owner's call, not Grove's.
# oauth2_provider.W008 warns that plain-http redirect URIs are allowed: they are, but
# only for loopback addresses (native apps, RFC 8252) — grove/identity/oauth.py refuses any other
# http redirect URI at registration.
# The reverse proxies whose forwarded header names the client, and that header
# (grove.kernel.addresses): the address sign-in throttling and every per-address limit
# count by. None trusted by default: then every request's address is its peer's.
GROVE_TRUSTED_PROXIES = CONFIG.trusted_proxies
GROVE_FORWARDED_HEADER = CONFIG.forwarded_header
SILENCED_SYSTEM_CHECKS = ["security.W005", "security.W021", "oauth2_provider.W008"]

# OAuth 2.1 for MCP clients (django-oauth-toolkit; grove/identity/oauth.py). Grove is both the
# authorization server (issuer = the base URL) and the one protected resource, /mcp:
# every token is bound to it (RFC 8707). PKCE S256 for every client (a registration makes
# a public client with token_endpoint_auth_method none, else a confidential one: RFC
# 7591); no implicit or password grants; refresh tokens rotate, and replaying an old one
# revokes the family; tokens and codes are stored hashed. Registration is open (it grants
# nothing: the owner approves each client on the Connections page before it reaches any
# note). A confidential client's secret is stored with the client-secret hasher (see
# PASSWORD_HASHERS), and failed client authentications are limited per client and
# address (GROVE_CLIENT_AUTH_LIMIT).
GROVE_ISSUER = CONFIG.base_url.rstrip("/")
GROVE_MCP_RESOURCE = GROVE_ISSUER + "/mcp"
# The names of this server a client may be given: the base URL, and for a loopback base
# URL its loopback siblings (an app configured with http://localhost:8000/mcp is talking
# to http://127.0.0.1:8000). Metadata names the one a client reached; tokens bound to any
# of them are valid here (grove/identity/oauth.py).
GROVE_ORIGINS = CONFIG.origins
GROVE_MCP_RESOURCES = tuple(origin + "/mcp" for origin in GROVE_ORIGINS)
GROVE_OAUTH_GRANT_TYPES = ["authorization_code", "refresh_token"]  # the token endpoint's
OAUTH2_PROVIDER = {
    "SCOPES": {"mcp": "Use Grove's tools within what the owner approves"},
    "DEFAULT_SCOPES": ["mcp"],
    "PKCE_REQUIRED": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "CLIENT_SECRET_HASHER": "client_secret_pbkdf2_sha256",  # ClientSecretHasher.algorithm
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "REFRESH_TOKEN_GRACE_PERIOD_SECONDS": 0,
    "ACCESS_TOKEN_EXPIRE_SECONDS": 3600,
    "REFRESH_TOKEN_EXPIRE_SECONDS": 30 * 24 * 3600,
    # Desktop clients redirect to their own schemes (Cursor) or to a loopback port.
    "ALLOWED_REDIRECT_URI_SCHEMES": ["https", "http", "cursor", "vscode", "vscode-insiders",
                                     "windsurf", "claude"],
    "ALLOW_LOCALHOST_LOOPBACK": True,
    "OIDC_ISS_ENDPOINT": GROVE_ISSUER,
    "OAUTH2_PROTECTED_RESOURCE_IDENTIFIER": GROVE_MCP_RESOURCE,
    "OAUTH2_PROTECTED_RESOURCE_AUTHORIZATION_SERVERS": [GROVE_ISSUER],
    "OAUTH2_PROTECTED_RESOURCE_NAME": "Grove",
    "OAUTH2_GRANT_TYPES_SUPPORTED": GROVE_OAUTH_GRANT_TYPES,
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none", "client_secret_basic",
                                                     "client_secret_post"],
    "DCR_ENABLED": True,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    "DCR_REGISTRATION_TOKEN_EXPIRE_SECONDS": 24 * 3600,
    # Client ID metadata documents: a client may name itself by an https URL whose JSON
    # describes it (fetched with the toolkit's SSRF-safe fetcher: public addresses only,
    # no redirects, size and time limits; Grove checks the document and keeps why one
    # failed, for the consent page: grove/identity/client_metadata.py).
    "CIMD_ENABLED": True,
    "CIMD_METADATA_FETCHER": "grove.identity.client_metadata.ClientDocumentFetcher",
    "OAUTH2_VALIDATOR_CLASS": "grove.identity.oauth.GroveOAuth2Validator",
    "RESOURCE_SERVER_TOKEN_RESOURCE_VALIDATOR": "grove.identity.oauth.audience_is_mcp",
}

# Sign-in throttling (grove/kernel/throttle.py), within a window: `pair` failures for one
# account name from one address, or `address` failures from one address, refuse further
# tries from that address (the form says when to try again); from `account` failures of
# a name from anywhere on, its sign-ins are held `step` seconds more per failure (at most
# `max_delay`) — slowed, never refused.
GROVE_LOGIN_LIMITS = {"pair": 5, "address": 20, "account": 5, "step": 0.5, "max_delay": 3.0,
                      "window": 15 * 60}
# Open OAuth client registration: registrations per client address within a window
# (over it → 429 with Retry-After), and how long a registered client that never obtained
# a token may stay before the periodic clean-up deletes it.
GROVE_REGISTRATION_LIMIT = {"count": 20, "window": 3600}
# Failed client authentications at the token endpoint (a wrong client secret, an unknown
# client) per client and address within a window: past `count`, that address's token
# requests for that client are answered 429 with Retry-After, before any secret is
# checked, until the window ends (grove.kernel.throttle.client_auth_blocked_for).
GROVE_CLIENT_AUTH_LIMIT = {"count": 10, "window": 60}
GROVE_UNUSED_CLIENT_SECONDS = 24 * 3600

# The per-connection API rate limit counts in the cache: Redis when configured (shared
# by every process), else process memory (the embedded default runs one web process).
GROVE_API_RATE_LIMIT = CONFIG.api_rate_limit
GROVE_PUBLIC_RATE_LIMIT = CONFIG.public_rate_limit
if CONFIG.redis_url:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                          "LOCATION": CONFIG.redis_url, "KEY_PREFIX": "grove"}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache",
                          "LOCATION": "grove"}}

# Background jobs: Celery with Redis when REDIS_URL is set; otherwise kombu's
# filesystem transport with atomic message files (`grove.runtime.broker`) in $GROVE_HOME/broker,
# so the embedded default needs no Redis.
BROKER_DIR = GROVE_HOME / "broker"
if CONFIG.redis_url:
    CELERY_BROKER_URL = CONFIG.redis_url
    CELERY_BROKER_TRANSPORT_OPTIONS: dict = {}
else:
    CELERY_BROKER_URL = "grovefs://"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
        "polling_interval": 0.05,
    }
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# How often a worker says it is alive (grove.runtime.readiness: /readyz reports a worker
# silent for three of these).
GROVE_HEARTBEAT_SECONDS = 30
# How long a worker holds a job before `recover` gives it to another (grove.kernel.jobs).
GROVE_JOB_LEASE_SECONDS = CONFIG.job_lease_seconds
# A document note's most characters (SPEC §3; memory records: 6,000).
GROVE_NOTE_MAX_CHARS = CONFIG.note_max_chars
CELERY_BEAT_SCHEDULE = {
    # Retention: expire notes past their expiry, soft-delete those expired > 60 days.
    "expire": {"task": "grove.expire", "schedule": 15 * 60},
    # Jobs whose worker died (lease expired) or whose wake-up was lost.
    "recover": {"task": "grove.recover", "schedule": 30},
    # Fold the term-statistics changes the writes appended (the statistics are current
    # without it; folding keeps recall's reads of them to one row per lexeme).
    "term-stats": {"task": "grove.term_stats", "schedule": 60},
    # The same for the live note counts per notebook (the library sidebar's).
    "note-counts": {"task": "grove.note_counts", "schedule": 60},
    # Notes an older release wrote during a rolling upgrade get their passages.
    "passages": {"task": "grove.passages", "schedule": 60},
    # Expired OAuth tokens and authorization codes.
    "clear-tokens": {"task": "grove.clear_tokens", "schedule": 6 * 3600},
    # Expired website sessions (Django's `clearsessions`).
    "clear-sessions": {"task": "grove.clear_sessions", "schedule": 3600},
    # Account deletions interrupted between their two steps (grove.identity.deletion).
    "finish-deletions": {"task": "grove.finish_deletions", "schedule": 60},
    # The worker's sign of life, read by /readyz.
    "heartbeat": {"task": "grove.heartbeat", "schedule": GROVE_HEARTBEAT_SECONDS},
}
# Periodic and maintenance tasks go to a queue of their own, which every `grove worker`
# consumes next to the default queue of job wake-ups. Both brokers take from a worker's
# queues in turn (kombu's FairCycle for grovefs, the rotating BRPOP for Redis), so a
# backlog of thousands of wake-ups delays them by one message, not by the backlog.
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_MAINTENANCE_QUEUE = "maintenance"
CELERY_TASK_ROUTES = {
    name: {"queue": CELERY_MAINTENANCE_QUEUE}
    for name in ("grove.recover", "grove.expire", "grove.term_stats", "grove.note_counts",
                 "grove.clear_tokens", "grove.clear_sessions", "grove.heartbeat",
                 "grove.finish_deletions", "grove.passages")
}
CELERY_BEAT_SCHEDULE_FILENAME = str(GROVE_HOME / "run" / "celerybeat-schedule")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
    # Every 4xx (a wrong key, a 429) is the caller's business, not the terminal's: under a
    # flood the warnings alone would cost more than the answers. Errors are still logged.
    "loggers": {"django.request": {"level": "ERROR"}},
}
