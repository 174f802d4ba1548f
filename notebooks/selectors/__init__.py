"""Reads of notebooks and notes, always scoped by the caller's grant (STYLE §8).

| module | reads |
|---|---|
| `access` | what a caller may see: grant and liveness filters, `access_note`/`access_notebook` |
| `library` | notes and notebooks as seen, pages, counts, revisions |
| `search` | `search`: full-text and filters, keyset pages |
| `recall` | `recall`: hybrid lexical + semantic ranking within a budget |
| `duplicates` | likely duplicates: `similar_notes`, `similar_to_text`, `duplicate_groups` |

Selectors import models and `notebooks.rules`, never a service. The interfaces call them
through this package (`from notebooks import selectors`).
"""

from notebooks.selectors.library import (
    NotebookPage,
    NotePage,
    note_get,
    note_list,
    note_page,
    note_revisions,
    notebook_get,
    notebook_list,
    notebook_names,
    notebook_out,
    notebook_page,
    notebook_page_of,
    notebook_subtree_counts,
)

__all__ = [
    "NotePage",
    "NotebookPage",
    "note_get",
    "note_list",
    "note_page",
    "note_revisions",
    "notebook_get",
    "notebook_list",
    "notebook_names",
    "notebook_out",
    "notebook_page_of",
    "notebook_page",
    "notebook_subtree_counts",
]
