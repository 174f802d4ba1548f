"""Ground truth on the wire (SPEC §10): what a place declares, the claims known to be
false there, and revisions of declared notes held for the owner."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import Field

from grove.kernel.schemas import Out, QueryIn
from notebooks.schemas.arguments import NotebookId, ToolArguments

TruthState = Literal["own", "inherited", "none"]
Policy = Literal["prioritize", "restrict"]
Coverage = Literal["covered", "not_covered"]


class TruthManifest(Out):
    """A declared note in a line: its first line and its section headings."""

    first_line: str
    headings: list[str]


class TruthNoteOut(Out):
    id: uuid.UUID
    versioned_id: str  # the current accepted version: reads follow revisions forward
    declared_version: int  # the version when it was declared
    version: int
    kind: str
    notebook_id: uuid.UUID | None = None  # null: Personal
    updated_at: datetime
    manifest: TruthManifest
    content: str | None = None  # with `full`


class NegativeOut(Out):
    id: uuid.UUID
    claim: str
    notebook_id: uuid.UUID | None = None  # null: the account's (applies everywhere)
    created_at: datetime


class TruthOut(Out):
    """A place's ground truth, unranked: no query, no score (the `truth` tool,
    `GET /v1/notebooks/{id}/truth`, `GET /v1/truth`). `state`: `own` (the place declares
    its own set), `inherited` (a notebook without one takes the account's, when its
    `inheritAccountTruth` is true) or `none`. `notes`: the declared notes this caller may
    read, in declaration order; `withheld` counts the others (archived, deleted, or
    outside the grant). `negatives`: the account's claims known to be false, and the
    notebook's."""

    state: TruthState
    policy: Literal["prioritize", "restrict"] | None = None
    notebook_id: uuid.UUID | None = None  # the place asked about (null: the account)
    inherit_account_truth: bool | None = None  # the notebook's flag (null: the account)
    # Agents' writes here are checked against this truth before they land (null: the account)
    verify_agent_writes: bool | None = None
    declared_at: datetime | None = None
    notes: list[TruthNoteOut]
    withheld: int
    negatives: list[NegativeOut]


class TruthQuery(QueryIn):
    full: bool = Field(default=False, description="Every declared note in full (default: "
                       "a manifest of first lines and headings).")


class TruthArgs(ToolArguments):
    notebook_id: NotebookId | None = Field(
        default=None, description="The notebook whose truth to read; omitted: the "
        "account's.")
    full: bool = Field(default=False, description="Every declared note in full (default: "
                       "first lines and headings).")


class PendingRef(Out):
    """A write held for the owner's review instead of landing — a change to declared
    ground truth, or a write into a notebook that checks agents' writes and that failed
    the check: until the owner accepts it on the website, everyone reads the accepted
    version (a held new note is not there at all). A checked write says its `verdict`
    (contradicts, or needs_review when it could not be checked) and the declared notes it
    contradicts that the caller may read."""

    id: uuid.UUID
    status: Literal["pending"] = "pending"
    verdict: str | None = Field(default=None, exclude_if=lambda v: v is None)
    contradicts: list[str] | None = Field(default=None, exclude_if=lambda v: not v)
