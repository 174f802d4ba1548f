"""Row-level security context (SPEC §5).

Every account-owned table has a policy `account_id = (SELECT grove_current_account())`.
Services and selectors enter `tenant(actor)` — a transaction in which that function
names the account — before touching those tables; outside it the runtime role sees no
rows at all.

The context cannot be forged with SQL. `tenant()` sets two transaction-local settings:
`grove.account_id` and `grove.account_mac`, an HMAC-SHA256 of the account id, the
backend's pid and the transaction's start time under a key derived from SECRET_KEY.
`grove_current_account()` (grove 0009) is a security-definer function that recomputes
the MAC with the same key, read from the owner-only table `grove_secret`, and returns
the account only when the two agree — NULL (no rows) otherwise. So the runtime role can
set `grove.account_id` to anything, but without the key it cannot make a MAC for it,
and a MAC it has seen is worthless in any other transaction or backend.

`grove migrate` stores the key (`store_database_keys`, after every migration, as the
owner role); the runtime checks at start that the stored key is the one it derives
(`context_works`), so a changed SECRET_KEY is a clear error, not an empty library.
Everything is transaction-local: a pooled connection carries nothing between requests.

**The account lock.** Every transaction that enters an account's context holds that
account's lock shared, taken in the statement that sets the context, before anything
is read or written. Account deletion takes it exclusive (`lock_account`) before it hides
the account and sets the tombstone (`grove.identity.deletion`): it waits for every
transaction already working in the account — a file of a bulk ingest, a request, a
job — to end, and every transaction that enters later waits for the deletion's commit
and then finds the tombstone (its context opens nothing). So no write can land between
"hide the notes" and the tombstone, whatever path it comes by. Shared holders never wait
for each other; the lock is an advisory one in its own key space (two int4 keys), so it
never collides with the bigint-keyed locks of the services.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import DatabaseError, connections, transaction
from django.utils.crypto import salted_hmac

from grove.kernel.errors import Gone

if TYPE_CHECKING:
    from grove.kernel.actor import Actor

SETTING = "grove.account_id"
# What PostgreSQL says when a policy refuses a row ("new row violates row-level security
# policy"): for a tenant context, only a deleted account's (grove 0014).
INSUFFICIENT_PRIVILEGE = "42501"
MAC_SETTING = "grove.account_mac"
# The key of the context MAC is derived from SECRET_KEY with this label (as Django's
# `salted_hmac` derives its keys); `grove_secret` row 'tenant' holds it.
KEY_SALT = "grove.tenancy.context"
# What identifies this transaction on the server: the same expressions as in
# grove_current_account() (grove 0009).
TRANSACTION_IDENTITY = (
    "pg_backend_pid(), (extract(epoch FROM transaction_timestamp()) * 1000000)::bigint"
)
# The account lock's key space: pg_advisory_xact_lock*(ACCOUNT_LOCK_CLASS, int4 of the
# account). Two accounts that share the int4 only ever wait for each other's deletion.
ACCOUNT_LOCK_CLASS = 0x67726F76  # "grov"
# Keys the database can check MACs with: purpose (row of `grove_secret`) → salt of the
# key derived from SECRET_KEY. Apps add theirs in AppConfig.ready (sharing: share links).
DATABASE_KEYS: dict[str, str] = {"tenant": KEY_SALT}


def context_mac(account_id: uuid.UUID | str, backend_pid: int, transaction_start: int) -> str:
    """The MAC that makes `account_id` the context of one transaction of one backend."""
    message = f"{account_id}|{backend_pid}|{transaction_start}"
    return salted_hmac(KEY_SALT, message, algorithm="sha256").hexdigest()


def enter(cursor: Any, account_id: uuid.UUID | str | None,
          local: tuple[tuple[str, str], ...] = ()) -> tuple[str, str] | None:
    """Make `account_id` (None: no account) the context of the cursor's current
    transaction; returns the previous (account, MAC) settings for `restore`, or None if
    they were this context already. Works on a Django or a plain psycopg cursor, always
    inside a transaction. `local`: further transaction-local settings, made in the same
    statement (one round trip fewer for a caller that needs them)."""
    cursor.execute(
        f"SELECT current_setting(%s, true), current_setting(%s, true), {TRANSACTION_IDENTITY}",
        [SETTING, MAC_SETTING],
    )
    previous_account, previous_mac, pid, started = cursor.fetchone()
    previous = (previous_account or "", previous_mac or "")
    value = "" if account_id is None else str(uuid.UUID(str(account_id)))
    context = (value, context_mac(value, pid, started) if value else "")
    # Compared with the MAC too: a setting made by anything else is never taken as ours.
    if context == previous:
        if local:
            restore(cursor, None, local)
        return None
    restore(cursor, context, local)
    return previous


def restore(cursor: Any, context: tuple[str, str] | None,
            local: tuple[tuple[str, str], ...] = ()) -> None:
    """Set the context (and `local` settings); an account's context comes with the
    account lock held shared until the transaction ends (see the module's docstring)."""
    pairs = [*(((SETTING, context[0]), (MAC_SETTING, context[1])) if context else ()), *local]
    calls = ["set_config(%s, %s, true)" for _ in pairs]
    values: list[Any] = [value for pair in pairs for value in pair]
    if context and context[0]:
        calls.append("pg_advisory_xact_lock_shared(%s, %s)")
        values.extend(account_lock_key(context[0]))
    cursor.execute("SELECT " + ", ".join(calls), values)


def account_lock_key(account_id: uuid.UUID | str) -> tuple[int, int]:
    """The account lock's two int4 keys."""
    head = uuid.UUID(str(account_id)).bytes[:4]
    return ACCOUNT_LOCK_CLASS, int.from_bytes(head, "big", signed=True)


def lock_account(account_id: uuid.UUID | str, using: str = "default") -> None:
    """Take the account lock exclusive until the caller's transaction ends: wait for
    every transaction in the account's context to end, and hold back every new one
    until then (account deletion). Call it in a transaction, before entering the
    account's context — the shared hold `tenant()` takes would otherwise be upgraded,
    and two such upgrades wait for each other."""
    connection = connections[using]
    if not connection.in_atomic_block:
        raise RuntimeError("lock_account holds its lock to the end of a transaction: "
                           "open one first")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", account_lock_key(account_id))


@contextmanager
def tenant(actor: Actor | uuid.UUID, *, using: str = "default",
           local: tuple[tuple[str, str], ...] = ()) -> Iterator[None]:
    """Open (or join) a transaction scoped to one account.

    Nested use with the same account is cheap; the previous value is restored on exit,
    so nothing leaks to the code around it even inside an outer transaction. A
    transaction this block opens ends with it, and its settings with it: nothing to
    restore then (one round trip fewer per service call). `local`: further
    transaction-local settings (`enter`), left as they are on exit.
    """
    account_id = actor if isinstance(actor, uuid.UUID) else actor.account_id
    outermost = not connections[using].in_atomic_block
    try:
        with transaction.atomic(using=using):
            with connections[using].cursor() as cursor:
                previous = enter(cursor, account_id, local)
            yield
            # On an exception the rollback (of the savepoint or transaction) undoes the
            # setting by itself; on success put back what the surrounding code had.
            if previous is not None and not outermost:
                with connections[using].cursor() as cursor:
                    restore(cursor, previous)
    except DatabaseError as exc:
        # A write refused by a policy in the outermost transaction (rolled back now, so
        # the connection can ask why): the account was deleted while this work ran.
        if outermost and _refused_by_policy(exc) and account_closed(account_id, using):
            raise Gone("This account was deleted.", code="account_deleted") from exc
        raise


def _refused_by_policy(exc: DatabaseError) -> bool:
    return getattr(exc.__cause__, "sqlstate", None) == INSUFFICIENT_PRIVILEGE


def account_closed(account_id: uuid.UUID | str, using: str = "default") -> bool:
    """Whether the account carries the tombstone (`grove.identity.deletion`): its
    tenant context opens nothing any more (grove 0014)."""
    from grove.models import Account

    return Account.objects.using(using).filter(id=account_id, deleted_at__isnull=False).exists()


def hmac_pads(salt: str, secret: str | bytes | None = None) -> tuple[bytes, bytes]:
    """HMAC-SHA256's inner and outer key blocks for the key `salted_hmac(salt, …,
    algorithm="sha256")` uses. The database stores these, so that built-in sha256()
    alone computes the HMAC: sha256(outer ‖ sha256(inner ‖ message))."""
    if secret is None:
        secret = settings.SECRET_KEY
    secret_bytes = secret.encode() if isinstance(secret, str) else secret
    key = hashlib.sha256(salt.encode() + secret_bytes).digest().ljust(64, b"\0")
    return bytes(b ^ 0x36 for b in key), bytes(b ^ 0x5C for b in key)


def store_database_keys(cursor: Any) -> None:
    """As the owner role (after every migrate): put the keys derived from this
    process's SECRET_KEY into `grove_secret`, replacing older ones."""
    for purpose, salt in DATABASE_KEYS.items():
        inner, outer = hmac_pads(salt)
        cursor.execute(
            "INSERT INTO grove_secret (purpose, inner_pad, outer_pad) VALUES (%s, %s, %s) "
            "ON CONFLICT (purpose) DO UPDATE "
            "SET inner_pad = EXCLUDED.inner_pad, outer_pad = EXCLUDED.outer_pad",
            [purpose, inner, outer],
        )


def context_works(using: str = "default") -> bool:
    """Whether the database accepts this process's contexts (the key `grove migrate`
    stored was derived from the same SECRET_KEY)."""
    probe = uuid.UUID(int=0)
    with tenant(probe, using=using), connections[using].cursor() as cursor:
        cursor.execute("SELECT grove_current_account()")
        return bool(cursor.fetchone()[0] == probe)


def active_account_ids() -> list:
    """Accounts background jobs act for (the account table is not tenant-scoped)."""
    from grove.models import Account

    return list(Account.objects.filter(is_active=True).order_by("id").values_list("id", flat=True))
