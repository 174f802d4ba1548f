"""Core use cases: owner setup and account settings."""

from __future__ import annotations

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from grove.actor import Actor
from grove.errors import Conflict, Invalid
from grove.models import Account


def account_setup_owner(*, username: str, password: str, email: str = "") -> Account:
    """Create the first account. Refused once any account exists (SPEC §5)."""
    username = username.strip()
    if not username or len(username) > 150:
        raise Invalid("Choose a user name of 1–150 characters.", code="invalid_username")
    try:
        validate_password(password, Account(username=username, email=email))
    except ValidationError as exc:
        raise Invalid(" ".join(exc.messages), code="weak_password") from None
    with transaction.atomic():
        # Serialise concurrent setups: the table lock makes "no account yet" a fact.
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("LOCK TABLE grove_account IN SHARE ROW EXCLUSIVE MODE")
        if Account.objects.exists():
            raise Conflict("Grove already has an owner; sign in instead.", code="already_set_up")
        return Account.objects.create_user(
            username=username, password=password, email=email, is_staff=True, is_superuser=True
        )


def account_set_capture_paused(*, actor: Actor, paused: bool) -> Account:
    """Pause or resume automatic capture for the whole account (website owner only)."""
    actor.require_session()
    with transaction.atomic():
        account = Account.objects.select_for_update().get(id=actor.account_id)
        if paused and account.capture_paused_at is None:
            account.capture_paused_at = timezone.now()
        elif not paused:
            account.capture_paused_at = None
        account.save(update_fields=["capture_paused_at"])
    return account

