"""Live note counts kept by the writes: how many active notes each notebook (and
Personal) of an account holds — the library sidebar's counts and the "of N" of an
unfiltered list read these instead of counting notes (migration 0022)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class NoteCount(models.Model):
    """A change of one place's count of active notes (`notebook_id` NULL: Personal),
    written by the database itself: statement-level triggers on `notebooks_note` append
    +n/-n whenever notes enter or leave `status = active` or an active note moves
    (migration 0022). The count of a place is the sum of its rows; `note_counts_compact`
    folds each place's rows into one periodically. Insert-only between compactions, as
    `TermDelta` is and for the same reason: concurrent saves of one account never wait
    for each other on a shared counter row, and batches never deadlock on two."""

    id = models.BigAutoField(primary_key=True)
    # No database constraints: the note that caused the row already references both, a
    # foreign-key check per save would be most of the trigger's cost, and notebooks are
    # only ever soft-deleted (hard deletes come with the account, which cascades here).
    account = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="+", db_constraint=False)
    notebook_id = models.UUIDField(null=True, blank=True)
    notes = models.IntegerField()

    class Meta:
        db_table = "notebooks_notecount"
        indexes = [models.Index(fields=["account", "notebook_id"], name="notecount_place")]

    def __str__(self) -> str:
        return f"{self.notebook_id or 'Personal'}: {self.notes:+d}"
