"""Row-level security context (SPEC §5).

Every account-owned table has a policy `account_id = grove_current_account()`, which
reads the transaction-local setting `grove.account_id`. Services and selectors enter
`tenant(actor)` — a transaction with that setting — before touching those tables;
outside it the runtime role sees no rows at all.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from django.db import connections, transaction

if TYPE_CHECKING:
    from grove.actor import Actor

SETTING = "grove.account_id"


@contextmanager
def tenant(actor: Actor | uuid.UUID, *, using: str = "default") -> Iterator[None]:
    """Open (or join) a transaction scoped to one account.

    Nested use with the same account is cheap; the previous value is restored on exit,
    so nothing leaks to the code around it even inside an outer transaction.
    """
    account_id = actor if isinstance(actor, uuid.UUID) else actor.account_id
    value = str(account_id)
    with transaction.atomic(using=using):
        with connections[using].cursor() as cursor:
            cursor.execute(
                "SELECT current_setting(%s, true), set_config(%s, %s, true)",
                [SETTING, SETTING, value],
            )
            previous = cursor.fetchone()[0] or ""
        yield
        # On an exception the rollback (of the savepoint or transaction) undoes the
        # setting by itself; on success put back what the surrounding code had.
        if previous != value:
            with connections[using].cursor() as cursor:
                cursor.execute("SELECT set_config(%s, %s, true)", [SETTING, previous])
