"""Confidential OAuth clients' secrets: stored with a fast salted hash, not the password hasher.

The toolkit hashes a client's secret with Django's password machinery; by default with the
first of `PASSWORD_HASHERS`, the hasher for people's passwords (PBKDF2-SHA256,
1,500,000 iterations in Django 6.1). Every token request of a confidential client then
costs a third of a second of CPU or more (docs/benchmarks.md, "Client secrets"), and
since registration is open anyone could make Grove spend it on purpose: register a
confidential client, send token requests with wrong secrets.

Stretching a hash protects secrets a person chose, which a guesser can enumerate. A
client's secret is not one: the toolkit draws it on the server — 128 characters from 62
(`ClientSecretGenerator`, `CLIENT_SECRET_GENERATOR_LENGTH`), about 762 bits — and a
client cannot choose its own (the registration endpoints take no `client_secret` from
the metadata; `tests/grove/identity/test_client_secrets.py` holds them to that). No
guess at such a secret can succeed however fast each costs, so one round of a keyed
hash is as strong as 1.5 million: `ClientSecretHasher` is PBKDF2-SHA256 with one
iteration — an HMAC-SHA256 of a random salt under the secret. A subclass of Django's
hasher rather than a hash of our own keeps Django's format (algorithm$iterations$salt$
hash), its salt, its constant-time comparison and its algorithm prefix, by which
`check_password` tells these hashes from the ones stored before.

Secrets stored before keep verifying with the hasher their prefix names (PBKDF2, slow);
the first right one re-stores the secret with `ClientSecretHasher` (`check_secret`).
People's passwords are untouched: the password hasher stays first in `PASSWORD_HASHERS`
(settings), and this one is used only where it is named (`CLIENT_SECRET_HASHER`).
"""

from __future__ import annotations

from django.contrib.auth.hashers import (
    PBKDF2PasswordHasher,
    check_password,
    identify_hasher,
    make_password,
)
from django.utils.crypto import constant_time_compare


class ClientSecretHasher(PBKDF2PasswordHasher):
    """PBKDF2-SHA256 with one iteration, for server-drawn client secrets only (see the
    module's docstring for why that is as strong as the password hasher for them)."""

    algorithm = "client_secret_pbkdf2_sha256"
    iterations = 1


ALGORITHM = ClientSecretHasher.algorithm
HASHER = f"{ClientSecretHasher.__module__}.{ClientSecretHasher.__qualname__}"


def check_secret(provided: str, stored: str) -> bool:
    """Whether `provided` is the client secret stored as `stored` (the toolkit's
    `_check_secret`, with the client-secret hasher preferred). A right secret stored with
    another hasher (before this one existed) is stored again with this one — compared and
    set on the stored value, so two requests racing both succeed and one rewrites it.
    A secret stored unhashed (an application with `hash_client_secret` off: Grove makes
    none) is compared as the toolkit does."""
    try:
        identify_hasher(stored)
    except ValueError:
        return constant_time_compare(provided, stored)

    def store_again(secret: str) -> None:
        from oauth2_provider.models import get_application_model

        # update() skips the field's own hashing on save: hash it here.
        get_application_model().objects.filter(
            client_secret=stored, hash_client_secret=True).update(
            client_secret=make_password(secret, hasher=ALGORITHM))

    return check_password(provided, stored, setter=store_again, preferred=ALGORITHM)


def checked_cheaply(client_id: str) -> bool:
    """Whether checking a secret for OAuth client `client_id` costs next to nothing: a
    public client (no secret), an unknown one, or a secret stored with
    `ClientSecretHasher`. Only secrets stored before it (the password hasher) are slow.
    Read outside any tenant: the toolkit's tables are not account rows."""
    from oauth2_provider.models import get_application_model

    stored = (get_application_model().objects.filter(client_id=client_id)
              .values_list("client_secret", flat=True).first())
    return not stored or stored.startswith(f"{ALGORITHM}$")
