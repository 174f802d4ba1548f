"""Reads of core data that need no tenant context."""

from grove.models import Account


def account_exists() -> bool:
    """Whether the one-time owner setup has happened."""
    return Account.objects.exists()
