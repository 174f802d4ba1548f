"""Reads of core data that need no tenant context."""

from grove.models import Account


def account_exists() -> bool:
    """Whether the one-time owner setup has happened."""
    return Account.objects.exists()


def active_account_ids() -> list:
    """Accounts background jobs act for (the account table is not tenant-scoped)."""
    return list(Account.objects.filter(is_active=True).order_by("id").values_list("id", flat=True))
