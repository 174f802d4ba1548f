"""Filters the notebooks pages word things with: `{{ time|ago }}` ("just now", "3 hours
ago") and `{{ revision.reason|change_words }}` ("Edited", not `update`)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django import template
from django.utils import timezone
from django.utils.timesince import timesince

from notebooks.models import RevisionReason

register = template.Library()

JUST_NOW = timedelta(minutes=1)  # timesince says "0 minutes" below this

# What each kind of revision did, as the History list and Activity say it.
CHANGE_WORDS: dict[str, str] = {
    RevisionReason.CREATE: "Created",
    RevisionReason.UPDATE: "Edited",
    RevisionReason.RESTORE_REVISION: "Restored from an earlier version",
    RevisionReason.ARCHIVE: "Archived",
    RevisionReason.RESTORE: "Restored",
    RevisionReason.MOVE: "Moved",
    RevisionReason.EXPIRE: "Expired",
    RevisionReason.DELETE: "Deleted",
}


@register.filter
def ago(value: datetime | None) -> str:
    """How long ago, in words: "just now" within a minute, else "5 minutes ago"."""
    if not value:
        return ""
    if timezone.now() - value < JUST_NOW:
        return "just now"
    return f"{timesince(value)} ago"


@register.filter
def change_words(reason: str) -> str:
    """A revision's reason as words ("update" → "Edited"); a reason without words of its
    own (one added later) as itself, readable."""
    return CHANGE_WORDS.get(reason, str(reason).replace("_", " ").capitalize())
