"""Writes to notebooks and notes: one keyword-only function per use case (STYLE §1).

Each service takes the resolved `actor`, validates its input before touching the
database, then runs in one tenant transaction (`grove.kernel.tenancy.tenant`): access
checks, the operation-id claim, the change, a revision row per changed note, and the
operation record (`frame.idempotent`). Errors are `grove.kernel.errors` exceptions with
stable codes; when one is raised nothing has changed.

| module | use cases |
|---|---|
| `remember` | remember a note, or a batch of up to 50 in one transaction |
| `notes` | update (whole or a partial edit), move |
| `checklists` | tick or clear one task-list box of a note (an ordinary update) |
| `batches` | forget, archive, restore; the library's bulk move and tag (a result per item) |
| `batch_undo` | the Undo of a batch the library made (archive, delete, move, tag) |
| `revisions` | the revision every change writes; restore an old revision |
| `notebooks` | create, rename/move, archive, restore, delete a subtree |
| `trash` | Recently deleted: the owner brings back a deleted note or notebook |
| `maintenance` | retention, indexing retries and back-fill |
| `indexing` | the embedding job and re-indexing to another model |
| `term_stats` | the lexical arm's term statistics |
| `portability` | export and import of a whole account |
| `vision` | a notebook's or the account's vision, replaced as a new version |
| `truth` | ground truth: declarations, inheritance, checks, negatives, held changes |
| `write_check` | a connection's write checked against declared truth before it lands |

The interfaces call them through this package (`from notebooks import services`).
"""

from notebooks.services.batch_undo import note_batch_undo
from notebooks.services.batches import (
    note_archive,
    note_forget,
    note_move_many,
    note_restore,
    note_tag,
)
from notebooks.services.checklists import note_task_set
from notebooks.services.maintenance import (
    note_expire_due,
    note_index_missing,
    note_retry_indexing,
)
from notebooks.services.notebooks import (
    notebook_archive,
    notebook_create,
    notebook_delete,
    notebook_restore,
    notebook_update,
)
from notebooks.services.notes import note_edit, note_move, note_update
from notebooks.services.remember import note_remember, note_remember_batch
from notebooks.services.revisions import note_restore_revision
from notebooks.services.trash import note_undelete, notebook_undelete
from notebooks.services.truth import (
    negative_add,
    negative_remove,
    pending_accept,
    pending_reject,
    truth_declare,
    truth_set_inheritance,
    truth_set_verification,
)
from notebooks.services.vision import vision_update

__all__ = [
    "note_archive",
    "note_batch_undo",
    "note_expire_due",
    "note_forget",
    "note_index_missing",
    "note_move",
    "note_move_many",
    "note_remember",
    "note_remember_batch",
    "note_restore",
    "note_restore_revision",
    "note_retry_indexing",
    "note_tag",
    "note_task_set",
    "note_undelete",
    "note_edit",
    "note_update",
    "notebook_archive",
    "notebook_create",
    "notebook_delete",
    "notebook_restore",
    "notebook_undelete",
    "notebook_update",
    "negative_add",
    "negative_remove",
    "pending_accept",
    "pending_reject",
    "truth_declare",
    "truth_set_inheritance",
    "truth_set_verification",
    "vision_update",
]
