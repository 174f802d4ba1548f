"""Account deletion (SPEC §13): revoke first, then hide; a tombstone stops the rest.

The owner, signed in to the website and giving the password again, deletes the account
(`account_delete`). It happens in two transactions, in this order:

1. **Revoke**, committed before anything is hidden. The account is deactivated, which
   every way in checks on every request — API keys (`grove_key_connection`), OAuth
   bearer tokens (`grove.identity.oauth`), share links (`grove_share_open`), website
   sessions (Django's authentication backend) and background jobs — so the very next
   request of any of them is refused. Then, for good: every connection is revoked,
   every OAuth grant and token is deleted, and each app's revoker runs (sharing:
   every share link is revoked).
2. **Hide**: first the account lock is taken exclusive (`grove.kernel.tenancy.
   lock_account`): every transaction in the account's context holds it shared, so
   the hide waits for those already running — a file of a bulk ingest, a request
   that authenticated just before the revoke, a job — to commit, and every one that
   starts later waits for the hide. Then each app soft-deletes its content (notes,
   notebooks, conversations), the account's unfinished jobs are discarded, and the
   tombstone (`Account.deleted_at`) is set. From its commit the account's tenant
   context opens nothing (grove 0014): the transactions that waited, a job delayed
   past the deletion, an operation id retried after it or a late OAuth callback read
   no row and write none (`tenant()` answers such a write `account_deleted`, 410).
   No write lands between "hide the notes" and the tombstone: the lock is taken in
   the statement that sets the context, before anything is read or written.

The rows stay, hidden, until the operator runs `grove purge --older-than DAYS`
(`grove.kernel.purge`), which removes them for good and keeps only the tombstone.

Apps register their steps (`register_revoker`, `register_hider`) in `ready()`; core
imports no feature app.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.hashers import make_password
from django.db import transaction
from django.utils import timezone

from grove.identity.oauth import end_account_tokens
from grove.kernel.actor import Actor
from grove.kernel.errors import Gone, Invalid
from grove.kernel.tenancy import lock_account, tenant
from grove.models import Account, Connection, Job

# (account id, the step's time) → how many rows it changed.
Step = Callable[[uuid.UUID, datetime], int]

_REVOKERS: dict[str, Step] = {}
_HIDERS: dict[str, Step] = {}


def register_revoker(name: str, step: Step) -> None:
    """A way in that ends with the account (in the revoke transaction)."""
    _REVOKERS[name] = step


def register_hider(name: str, step: Step) -> None:
    """Content that is soft-deleted with the account (in the hide transaction)."""
    _HIDERS[name] = step


@dataclass(frozen=True)
class AccountDeleted:
    revoked_at: datetime
    deleted_at: datetime
    revoked: dict[str, int]  # what was revoked: connections, oauth tokens, share links
    hidden: dict[str, int]  # what was soft-deleted: notes, notebooks, conversations, jobs


def account_delete(*, actor: Actor, password: str) -> AccountDeleted:
    """Delete the owner's account (website session only), given its password again
    (`wrong_password` changes nothing). Revokes every way in first, in its own
    transaction, then hides the content and sets the tombstone in a second one. Runs
    outside any transaction (each step must commit on its own)."""
    actor.require_session()
    if transaction.get_connection().in_atomic_block:
        raise RuntimeError("account_delete commits its steps itself: call it outside a "
                           "transaction")
    account = Account.objects.filter(id=actor.account_id).first()
    if account is None or account.deleted_at is not None:
        raise Gone("This account was deleted.", code="account_deleted")
    if not isinstance(password, str) or not account.check_password(password):
        raise Invalid("That is not your password; nothing was deleted.",
                      code="wrong_password")
    revoked_at, revoked = _revoke(account.id)
    deleted_at, hidden = _hide(account.id)
    return AccountDeleted(revoked_at=revoked_at, deleted_at=deleted_at, revoked=revoked,
                          hidden=hidden)


def finish_deletions() -> int:
    """Finish every deletion cut short after its revoke (beat, `grove purge`): hide and
    set the tombstone. Returns how many were finished."""
    pending = list(Account.objects.filter(deletion_requested_at__isnull=False,
                                          deleted_at__isnull=True).values_list("id", flat=True))
    for account_id in pending:
        _hide(account_id)
    return len(pending)


def _revoke(account_id: uuid.UUID) -> tuple[datetime, dict[str, int]]:
    with tenant(account_id):
        now = timezone.now()
        # The account row locked to the commit: a second deletion waits, then finds the
        # request made and only revokes what is left (nothing).
        account = Account.objects.select_for_update().get(id=account_id)
        Account.objects.filter(id=account_id).update(
            is_active=False, deletion_requested_at=account.deletion_requested_at or now)
        revoked = {
            "connections": Connection.objects.filter(account_id=account_id).exclude(
                status=Connection.Status.REVOKED).update(
                status=Connection.Status.REVOKED, revoked_at=now, pending_request=None),
            "oauthTokens": end_account_tokens(account_id=account_id),
        }
        for name, step in _REVOKERS.items():
            revoked[name] = step(account_id, now)
    return now, revoked


def _hide(account_id: uuid.UUID) -> tuple[datetime, dict[str, int]]:
    with transaction.atomic():
        # Before the context is entered (whose shared hold this would upgrade): wait for
        # every transaction in the account to end, hold back every new one to the commit.
        lock_account(account_id)
        return _hide_locked(account_id)


def _hide_locked(account_id: uuid.UUID) -> tuple[datetime, dict[str, int]]:
    with tenant(account_id):
        now = timezone.now()
        hidden = {name: step(account_id, now) for name, step in _HIDERS.items()}
        hidden["jobs"] = Job.objects.filter(
            account_id=account_id, status__in=[Job.Status.QUEUED, Job.Status.RUNNING]).update(
            status=Job.Status.DISCARDED, finished_at=now, lease_token=None,
            lease_expires_at=None, last_error="the account was deleted")
        # Last: from this row's commit the account's context opens nothing (grove 0014).
        # A deletion that ran meanwhile set it already: the first time stays.
        Account.objects.filter(id=account_id, deleted_at__isnull=True).update(
            deleted_at=now, password=make_password(None))
    return now, hidden
