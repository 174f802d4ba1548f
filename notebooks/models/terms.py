"""The lexical arm's term statistics (SPEC §4): per account, how many passages of active
notes hold each lexeme, kept by the writes (`notebooks.services.term_stats`)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex, OpClass
from django.db import models


class TermStat(models.Model):
    """Document frequency of a lexeme among one account's active notes (the lexical arm
    of recall weighs terms by rarity); the row with the empty lexeme holds the number of
    active notes. The current count of a lexeme is this row plus its `TermDelta` rows:
    writes add deltas, `term_stats_compact` folds them in here (migration 0011)."""

    id = models.BigAutoField(primary_key=True)
    account = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="+")
    lexeme = models.TextField()
    ndoc = models.PositiveIntegerField()

    class Meta:
        db_table = "notebooks_termstat"
        indexes = [
            # Words spelled like a search word (`grove_search_variants`, pg_trgm).
            GinIndex(OpClass(models.F("lexeme"), name="gin_trgm_ops"),
                     name="termstat_lexeme_trgm"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["account", "lexeme"], name="termstat_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.lexeme}: {self.ndoc}"


class TermDelta(models.Model):
    """A change of `TermStat` counts, written by the database itself: statement-level
    triggers on `notebooks_note` add +1/-1 per distinct lexeme (and to the empty lexeme,
    the note count) whenever a note enters or leaves `status = active` or an active
    note's `search` vector changes (migration 0011). Insert-only, so concurrent saves of
    one account never wait for each other or deadlock on a shared counter row; readers
    sum base and deltas in one statement, and `term_stats_compact` folds the deltas into
    `TermStat` periodically."""

    id = models.BigAutoField(primary_key=True)
    # No database constraint: the note that caused the delta already references the
    # account, and a deferred foreign-key check per lexeme row would be most of a save's
    # trigger cost. Deleting an account still deletes its deltas (Django cascades).
    account = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="+", db_constraint=False)
    lexeme = models.TextField()
    ndoc = models.IntegerField()

    class Meta:
        db_table = "notebooks_termdelta"
        indexes = [models.Index(fields=["account", "lexeme"], name="termdelta_lexeme")]

    def __str__(self) -> str:
        return f"{self.lexeme}: {self.ndoc:+d}"
