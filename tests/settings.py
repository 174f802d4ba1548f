"""Test settings: Grove's own settings on a private data folder.

The suite runs its own embedded PostgreSQL in `$GROVE_TEST_HOME` (default: a folder
under the system temp dir), never in the developer's `~/.grove`. Set DATABASE_URL and
GROVE_MIGRATE_DATABASE_URL to run it against an external PostgreSQL with pgvector.
"""

import hashlib
import os
import tempfile
from pathlib import Path

# One test server per checkout, so two checkouts can run their suites side by side.
_checkout = hashlib.sha256(str(Path(__file__).resolve().parent.parent).encode()).hexdigest()[:8]
os.environ["GROVE_HOME"] = os.environ.get(
    "GROVE_TEST_HOME",
    os.path.join(tempfile.gettempdir(), f"grove-test-{os.getuid()}-{_checkout}"),
)
os.environ.setdefault("GROVE_SECRET_KEY", "test-secret-key-that-is-long-enough-for-django-0123")


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# The live test server (tests/conftest.py `site_url`) listens on this port, and Grove's
# base URL names it: OAuth metadata, token audiences and approval links must point at
# the server a client actually talks to.
TEST_SITE_PORT = int(os.environ.get("GROVE_TEST_SITE_PORT") or _free_port())
os.environ["GROVE_TEST_SITE_PORT"] = str(TEST_SITE_PORT)
os.environ["GROVE_BASE_URL"] = f"http://127.0.0.1:{TEST_SITE_PORT}"

from grove.settings import *  # noqa: E402, F403

# Fast password hashes for the suite's many accounts; the client-secret hasher stays (the
# toolkit names it). tests/grove/identity/test_client_secrets.py runs Grove's own list.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher",
                    "grove.identity.client_secrets.ClientSecretHasher"]
ALLOWED_HOSTS = [*ALLOWED_HOSTS, "testserver"]  # noqa: F405

# Most tests use the deterministic fake embedder;
# tests/grove/embeddings/test_local_model.py loads the real one.
GROVE_EMBEDDER_FACTORY = "tests.fake_embedder.FakeEmbedder"
