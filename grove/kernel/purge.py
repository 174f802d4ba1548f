"""`grove purge --older-than DAYS`: soft-deleted content past the retention window, gone
for good (SPEC §13) — for operators who must (a legal request, a disk to reclaim).

Deletion in Grove is retained soft deletion: rows stay, hidden, and every backup holds
them. Purging removes:

* **deleted accounts** (`grove.identity.deletion`) whose tombstone is older than the
  window: every row that points at the account, in every table (found in the database's
  own foreign keys, so a table added later is included without a change here), in an
  order that satisfies the keys that are checked at once. The account row stays as
  the tombstone, its name and e-mail scrubbed (`deleted-<id>`);
* in live accounts, what each app registered (`register`): notes deleted before the
  window with their revisions, vectors and ledger rows; deleted notebooks nothing
  points at any more; deleted conversations; share links of what is purged.

It runs as the schema owner (the `owner` database alias, as `grove migrate` does): a
deleted account's tenant context opens nothing for the runtime role (grove 0014), and
physical deletion is not something the web process may do. Each account is one
transaction; a purge cut short leaves every account either purged or untouched, and
running it again finishes the work. Restoring an older backup brings purged rows back
(README, "Retention and deletion").
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.contrib.auth.hashers import make_password
from django.db import connections
from django.utils import timezone

from grove.kernel.tenancy import tenant

OWNER = "owner"
ACCOUNT_TABLE = "grove_account"

# (account id, cutoff, using) → rows removed; registered with a place in the order
# (lower first: a share link goes before the note it points at).
Purger = Callable[[uuid.UUID, datetime, str], int]
_PURGERS: list[tuple[int, str, Purger]] = []


def register(order: int, name: str, purger: Purger) -> None:
    _PURGERS.append((order, name, purger))
    _PURGERS.sort(key=lambda item: item[0])


@dataclass
class Purged:
    cutoff: datetime
    accounts: int = 0  # deleted accounts emptied
    rows: dict[str, int] = field(default_factory=dict)  # table or purger → rows removed

    def add(self, name: str, count: int) -> None:
        if count:
            self.rows[name] = self.rows.get(name, 0) + count


def purge(*, older_than: timedelta, using: str = OWNER) -> Purged:
    cutoff = timezone.now() - older_than
    done = Purged(cutoff=cutoff)
    from grove.models import Account

    accounts = list(Account.objects.using(using).order_by("id").values_list(
        "id", "deleted_at", "is_active"))
    references = account_references(using)
    for account_id, deleted_at, active in accounts:
        if deleted_at is not None and deleted_at < cutoff and not active:
            if _empty_account(account_id, references, using, done):
                done.accounts += 1
        elif deleted_at is None:
            with tenant(account_id, using=using):
                for _, name, purger in _PURGERS:
                    done.add(name, purger(account_id, cutoff, using))
    return done


def account_references(using: str = OWNER) -> list[tuple[str, str]]:
    """(table, column) of every model's foreign key to the account — Django's models,
    so keys made without a database constraint (term deltas, note counts) count too —
    children first: a table comes before any table it points at with a database key
    checked at once (Django's own keys are deferred to the commit, when every row of the
    account is gone)."""
    from django.apps import apps
    from django.conf import settings

    account_model = apps.get_model(settings.AUTH_USER_MODEL)
    refs: list[tuple[str, str]] = sorted({
        (model._meta.db_table, str(field.column))
        for model in apps.get_models(include_auto_created=True)
        for field in model._meta.concrete_fields
        if field.is_relation and field.related_model is account_model
        and model is not account_model and model._meta.managed})
    with connections[using].cursor() as cursor:
        cursor.execute(
            "SELECT conrelid::regclass::text, confrelid::regclass::text FROM pg_constraint "
            "WHERE contype = 'f' AND NOT condeferrable AND conrelid <> confrelid")
        edges = cursor.fetchall()
    tables = {table for table, _ in refs}
    parents: dict[str, set[str]] = {table: set() for table in tables}
    for child, parent in edges:
        if child in tables and parent in tables:
            parents[child].add(parent)
    # Children first: repeatedly take the tables nothing left points at.
    ordered: list[str] = []
    left = set(tables)
    while left:
        free = sorted(t for t in left if not any(t in parents[other] for other in left))
        if not free:  # a cycle of keys checked at once: cannot happen with Grove's schema
            raise PurgeError(f"foreign keys form a cycle among {sorted(left)}")
        ordered.extend(free)
        left.difference_update(free)
    rank = {table: i for i, table in enumerate(ordered)}
    return sorted(refs, key=lambda ref: rank[ref[0]])


class PurgeError(Exception):
    """Why the purge cannot go on, in one line."""


def _empty_account(account_id: uuid.UUID, references: list[tuple[str, str]], using: str,
                   done: Purged) -> bool:
    """Whether anything of the account was left to remove."""
    from psycopg import sql

    removed = 0
    with tenant(account_id, using=using), connections[using].cursor() as wrapper:
        cursor = wrapper.cursor  # psycopg's own: the statements are composed with sql
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        for table, column in references:
            cursor.execute(sql.SQL("DELETE FROM {} WHERE {} = %s").format(
                sql.Identifier(table), sql.Identifier(column)), [account_id])
            done.add(table, cursor.rowcount)
            removed += cursor.rowcount
        name = tombstone_name(account_id)
        cursor.execute(
            "UPDATE grove_account SET username = %s, email = '', first_name = '', "
            "last_name = '', password = %s, is_active = false, is_staff = false, "
            "is_superuser = false, last_login = NULL, secret_patterns = '[]'::jsonb, "
            "capture_paused_at = NULL WHERE id = %s AND username <> %s",
            [name, make_password(None), account_id, name])
        return bool(removed or cursor.rowcount)


def tombstone_name(account_id: uuid.UUID) -> str:
    return f"deleted-{uuid.UUID(str(account_id)).hex}"
