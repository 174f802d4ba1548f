"""Links between notes and the names notes answer to (docs/architecture.md, "Links
between notes"). Rows follow a note's current content; both tables are under
row-level security, and every reference stays within its account (migration 0001).

Deletes cascade in the database, not in Django (`DO_NOTHING`), as for passages; a link's
target, when its note is purged, becomes null in the database
(`ON DELETE SET NULL (target_note_id)`) — the link is unresolved again, never lost.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class LinkName(models.Model):
    """A name a note answers to: its title, its file's name, or an alias."""

    id = models.BigAutoField(primary_key=True)
    account = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.DO_NOTHING,
                                related_name="+")
    note = models.ForeignKey("notebooks.Note", on_delete=models.DO_NOTHING,
                             related_name="+")
    key = models.TextField()  # `links.rules.name_key` of the name
    kind = models.CharField(max_length=8)  # title | file | alias

    class Meta:
        db_table = "links_linkname"
        constraints = [
            models.UniqueConstraint(fields=["note", "key"], name="link_name_once"),
            models.CheckConstraint(condition=Q(kind__in=["title", "file", "alias"]),
                                   name="link_name_kind"),
        ]
        # text_pattern_ops: a prefix (`key LIKE 'ab%'`, the editor's suggestions) uses it
        # whatever the database's collation; equality too.
        indexes = [models.Index(fields=["account", "key"], name="link_name_by_key",
                                opclasses=["uuid_ops", "text_pattern_ops"])]

    def __str__(self) -> str:
        return f"{self.kind} {self.key!r} of {self.note_id}"


class Link(models.Model):
    """A link written in a note's current content, and the note it resolved to (null:
    unresolved — no note answers to its name yet)."""

    id = models.BigAutoField(primary_key=True)
    account = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.DO_NOTHING,
                                related_name="+")
    note = models.ForeignKey("notebooks.Note", on_delete=models.DO_NOTHING,
                             related_name="links_out")
    position = models.PositiveIntegerField()  # 1-based, in document order
    start = models.PositiveIntegerField()  # the markup's offsets in the note's content
    end = models.PositiveIntegerField()
    form = models.CharField(max_length=8)  # wiki | markdown
    target = models.TextField()  # as written, without heading or label
    heading = models.TextField(default="", blank=True)
    label = models.TextField(default="", blank=True)
    key = models.TextField()  # the name it asks for (`links.rules.wanted`)
    folders = models.TextField(default="", blank=True)  # the folders it names, "/"-joined keys
    whole = models.BooleanField(default=False)  # folders are the whole path (Markdown)
    target_note = models.ForeignKey("notebooks.Note", null=True, blank=True,
                                    on_delete=models.DO_NOTHING, related_name="links_in")

    class Meta:
        db_table = "links_link"
        constraints = [
            models.UniqueConstraint(fields=["note", "position"], name="link_position_once"),
            models.CheckConstraint(condition=Q(form__in=["wiki", "markdown"]),
                                   name="link_form"),
        ]
        indexes = [
            models.Index(fields=["account", "key"], name="link_by_key"),
            models.Index(fields=["target_note"], name="link_by_target"),
        ]

    def __str__(self) -> str:
        return f"{self.note_id}#{self.position} → {self.target!r}"
