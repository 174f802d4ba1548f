"""Public read-only share links (SPEC §9).

A share publishes one note or one notebook (its direct notes, or its whole live subtree
when `include_subnotebooks`). The link's token is derived from the share's random id and
a MAC under the server's secret (`sharing.tokens`), so nothing secret is stored and the
owner can see the link again; revoking is final. Visitors reach the shared content only
through the security-definer functions of migration sharing 0002.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class Share(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="+")
    note = models.ForeignKey("notebooks.Note", null=True, blank=True,
                             on_delete=models.PROTECT, related_name="+")
    notebook = models.ForeignKey("notebooks.Notebook", null=True, blank=True,
                                 on_delete=models.PROTECT, related_name="+")
    include_subnotebooks = models.BooleanField(default=False)
    allow_indexing = models.BooleanField(default=False)
    view_count = models.PositiveIntegerField(default=0)
    last_viewed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "sharing_share"
        indexes = [models.Index(fields=["account", "-created_at"], name="share_listing")]
        constraints = [
            models.CheckConstraint(
                condition=Q(note__isnull=False, notebook__isnull=True)
                | Q(note__isnull=True, notebook__isnull=False),
                name="share_one_target"),
            models.CheckConstraint(
                condition=Q(notebook__isnull=False) | Q(include_subnotebooks=False),
                name="share_subnotebooks_of_notebooks"),
            # One live link per target: sharing again shows the existing one.
            models.UniqueConstraint(fields=["note"], condition=Q(revoked_at__isnull=True),
                                    name="share_live_per_note"),
            models.UniqueConstraint(fields=["notebook"], condition=Q(revoked_at__isnull=True),
                                    name="share_live_per_notebook"),
        ]

    def __str__(self) -> str:
        target = f"note {self.note_id}" if self.note_id else f"notebook {self.notebook_id}"
        return f"share of {target}"
