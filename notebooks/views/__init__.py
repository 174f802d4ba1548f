"""The website pages of notebooks (SPEC §11), one module per part of the site:

| module | pages |
|---|---|
| `library` | the notes list (search, filters, infinite scroll); notebooks; import |
| `note_page` | a note: its text, toolbar and panels, and the actions they post to |
| `editor` | the new-note page, saving an edit, the live preview, ticking a task-list box |
| `vision` | saving a notebook's vision (notebook page) and the account's (Settings) |
| `agents` | what agents read first: "What your agents read" (a brief) and Activity |
| `truth` | the notebook page's Ground truth card: declare, inherit, negatives, held changes |
| `trash` | Recently deleted, and its restores (what Undo after a delete posts to) |
| `bulk` | the library's bulk bar (and drops onto the sidebar): a batch over ticked notes |
| `undo` | the Undo a flash message offers after an archive, move or delete |

Each view parses its input, calls one service or selector, and renders — a page, or with
HTMX the page's partial. `notebooks/urls.py` names the views through this package.
"""

from notebooks.views.account_import import account_import_upload
from notebooks.views.agents import activity, agent_brief
from notebooks.views.bulk import notes_bulk, notes_bulk_undo
from notebooks.views.editor import (
    note_create,
    note_edit,
    note_preview,
    note_task_tick,
    note_titles,
)
from notebooks.views.ingest_upload import ingest_progress, ingest_upload
from notebooks.views.library import (
    home,
    notebook_action,
    notebook_create,
    notebook_manage,
)
from notebooks.views.note_page import (
    note_action,
    note_detail,
    note_diff,
    note_move,
    note_pin,
    note_restore_revision,
    note_retry_indexing,
)
from notebooks.views.trash import trash, trash_note_restore, trash_notebook_restore
from notebooks.views.truth import (
    notebook_negative_add,
    notebook_negative_remove,
    notebook_pending_decide,
    notebook_truth_declare,
    notebook_truth_inherit,
    notebook_truth_verify,
)
from notebooks.views.vision import account_vision_edit, notebook_vision_edit

__all__ = [
    "account_import_upload",
    "ingest_progress",
    "ingest_upload",
    "account_vision_edit",
    "notebook_negative_add",
    "notebook_negative_remove",
    "notebook_pending_decide",
    "notebook_truth_declare",
    "notebook_truth_inherit",
    "notebook_truth_verify",
    "activity",
    "agent_brief",
    "home",
    "note_action",
    "note_create",
    "note_detail",
    "note_diff",
    "note_edit",
    "note_move",
    "note_pin",
    "note_preview",
    "note_titles",
    "note_restore_revision",
    "note_retry_indexing",
    "note_task_tick",
    "notebook_action",
    "notebook_create",
    "notebook_manage",
    "notebook_vision_edit",
    "notes_bulk",
    "notes_bulk_undo",
    "trash",
    "trash_note_restore",
    "trash_notebook_restore",
]
