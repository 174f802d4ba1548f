"""The notebooks app's tables in the lossless account archive (`grove.kernel.archive`,
`grove.identity.archive`), in the order they point at each other, with what is
rebuilt on import instead of moved."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from grove.kernel.archive import Archived, register
from grove.kernel.tenancy import tenant


def _notebooks_in_order(query: Any) -> list[Any]:
    from notebooks.services.portability import parents_first

    return parents_first(list(query.order_by("created_at", "id")))


def _notes_imported(rows: list[Any], options: dict[str, Any]) -> None:
    """Their dates and search terms from their text; live ones queued for the importing
    instance's embedding model (deleted ones are embedded if they are restored)."""
    from notebooks.dates import stated_dates
    from notebooks.models import Note, Status
    from notebooks.services.indexing import mark_for_indexing

    for note in rows:
        if note.status == Status.DELETED:
            Note.objects.filter(id=note.id).update(stated_dates=stated_dates(note.content))
        else:
            mark_for_indexing(note)


def _negatives_imported(rows: list[Any], options: dict[str, Any]) -> None:
    """Vectors by the importing instance's model, made once the import has committed
    (outside its transaction, as `negative_add` makes them)."""
    from grove.kernel.actor import Actor

    account_id, claims = rows[0].account_id, [(row.id, row.claim) for row in rows]

    def embed() -> None:
        from notebooks.models import NegativeClaim
        from notebooks.selectors import duplicates

        probes = [(claim_id, duplicates.probe_of(text)) for claim_id, text in claims]
        with tenant(Actor.system(account_id)):
            for claim_id, probe in probes:
                if probe is not None:
                    NegativeClaim.objects.filter(id=claim_id).update(
                        profile=probe.profile, embedding=probe.vector)

    transaction.on_commit(embed)


# What a held change may carry: the fields `note_remember` and `note_update` hold
# (`notebooks.services.truth.hold`); the owner's accept applies them to a note.
HELD_FIELDS = frozenset({"content", "kind", "task_id", "source_agent", "capture", "pinned",
                         "tags", "importance", "retention_days"})


def _held_imported(rows: list[Any], options: dict[str, Any]) -> None:
    from grove.kernel.errors import Invalid

    for row in rows:
        if not isinstance(row.changes, dict) or set(row.changes) - HELD_FIELDS:
            raise Invalid("A held change in the archive carries fields a write cannot.",
                          code="invalid_archive")


def register_tables() -> None:
    register(
        Archived("notebooks.Notebook", order=_notebooks_in_order),
        Archived("notebooks.Note", derived=("stated_dates", "indexing"),
                 imported=_notes_imported),
        Archived("notebooks.Revision"),
        Archived("notebooks.Vision"),
        Archived("notebooks.VisionRevision"),
        Archived("notebooks.TruthDeclaration"),
        Archived("notebooks.TruthNote"),
        Archived("notebooks.NegativeClaim", derived=("profile", "embedding"),
                 imported=_negatives_imported),
        Archived("notebooks.PendingRevision", imported=_held_imported),
        Archived("notebooks.IngestedChunk"),
    )
