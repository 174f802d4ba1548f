"""Reads of notebooks and notes, always scoped by the caller's grant (STYLE §8).

| module | reads |
|---|---|
| `access` | what a caller may see: grant and liveness filters, `access_note`/`access_notebook` |
| `library` | notes and notebooks as seen, pages, counts, revisions |
| `search` | `search`: full-text and filters, keyset pages |
| `source_agents` | the agents that saved the account's notes (the library's "Saved by") |
| `recall` | `recall`: hybrid lexical + semantic ranking within a budget |
| `duplicates` | likely duplicates: `similar_notes`, `similar_to_text`, `duplicate_groups` |
| `vision` | the account's and a notebook's vision, and their revisions |
| `brief` | the brief: an agent's first read, within a token budget |
| `whoami` | what a connection is and may do (the brief's startup line) |
| `activity` | recent activity: revisions in scope since a time |
| `truth` | declared ground truth of a place, and its negative claims |
| `truth_marks` | what ground truth says of each note a read returns: `authority`, `knownFalse` |
| `note_reads` | a note by id as every interface gives it, and a note at a version |
| `note_links` | a note's links both ways, through the caller's grant |
| `related` | a note's neighbourhood by links, to depth 2 |
| `trash` | Recently deleted: what the owner may still bring back |
| `negatives` | matching text against claims known to be false |

Selectors import models and `notebooks.rules`, never a service. The interfaces call them
through this package (`from notebooks import selectors`).
"""

from notebooks.selectors.activity import activity_list
from notebooks.selectors.brief import brief_for_connection, brief_get
from notebooks.selectors.library import (
    NotebookPage,
    NotePage,
    library_shelf,
    note_get,
    note_list,
    note_page,
    note_revisions,
    notebook_get,
    notebook_list,
    notebook_names,
    notebook_note_counts,
    notebook_out,
    notebook_page,
    notebook_page_of,
    notebook_shelf,
    notebook_subtree_counts,
)
from notebooks.selectors.note_links import title_suggestions
from notebooks.selectors.note_reads import note_read
from notebooks.selectors.related import related
from notebooks.selectors.trash import TrashPage, trash_list
from notebooks.selectors.truth import truth_for_agent, truth_get
from notebooks.selectors.vision import vision_get, vision_revisions
from notebooks.selectors.whoami import whoami

__all__ = [
    "NotePage",
    "NotebookPage",
    "TrashPage",
    "activity_list",
    "brief_for_connection",
    "brief_get",
    "library_shelf",
    "note_get",
    "note_list",
    "note_page",
    "note_read",
    "note_revisions",
    "notebook_get",
    "notebook_list",
    "notebook_names",
    "notebook_note_counts",
    "notebook_out",
    "notebook_page",
    "notebook_page_of",
    "notebook_shelf",
    "notebook_subtree_counts",
    "related",
    "title_suggestions",
    "trash_list",
    "truth_for_agent",
    "truth_get",
    "vision_get",
    "vision_revisions",
    "whoami",
]
