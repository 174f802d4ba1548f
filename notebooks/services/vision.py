"""Visions (SPEC §10): what the work is for, edited in place, every change a revision."""

from __future__ import annotations

import uuid

from django.utils import timezone

from grove.identity.hygiene import Origin, screen
from grove.kernel import operations
from grove.kernel.actor import WRITE, Actor
from grove.kernel.errors import Forbidden, Invalid
from grove.kernel.fences import expect_version
from notebooks.models import Vision, VisionRevision
from notebooks.rules import clean_vision, parse_uuid
from notebooks.schemas.briefs import VisionOut
from notebooks.selectors.access import access_destination
from notebooks.selectors.vision import connection_names, place_filter, vision_out
from notebooks.services.frame import idempotent, require_open_notebook, transaction_lock


def vision_update(
    *,
    actor: Actor,
    operation_id: uuid.UUID | str,
    notebook_id: uuid.UUID | str | None = None,
    content: str,
    expected_version: int | None = None,
) -> VisionOut:
    """Replace the account's vision (`notebook_id` None) or a notebook's with `content`
    (trimmed; empty clears it) as a new version, and write its revision.

    `expected_version` fences the change (0: "there is none yet"); a stale one is a
    `version_conflict` and nothing is written. A notebook's vision needs write access to
    that open notebook. The account's heads every agent's brief, so a connection may
    change it only when its grant is everything (every notebook and Personal) — a
    connection limited to some notebooks cannot write what the others read first."""
    op_id = operations.coerce_operation_id(operation_id)
    notebook_uuid = None if notebook_id is None else parse_uuid(notebook_id,
                                                                what="notebook id")
    content = clean_vision(content)
    # Every brief starts with it, so a credential in it would reach every agent.
    content = clean_vision(screen(actor, content, origin=Origin.EXPLICIT).text)
    if expected_version is not None and (isinstance(expected_version, bool)
                                         or not isinstance(expected_version, int)
                                         or expected_version < 0):
        raise Invalid("expectedVersion must be a whole number (0: no vision yet).",
                      code="invalid_version")

    def write() -> VisionOut:
        if notebook_uuid is None:
            actor.require(WRITE)
            grant = actor.grant
            if not actor.is_session and not (grant.all_notebooks and grant.personal):
                raise Forbidden("The account's vision heads every agent's brief: only a "
                                "connection granted every notebook and Personal (or the "
                                "owner on the website) may change it.",
                                code="account_vision_forbidden")
        else:
            require_open_notebook(access_destination(actor, notebook_uuid))
        row = _locked(actor, notebook_uuid)
        expect_version(what="vision", actual=row.version if row else 0,
                       expected=expected_version)
        now = timezone.now()
        if row is None:
            row = Vision(account_id=actor.account_id, notebook_id=notebook_uuid,
                         version=0, created_at=now)
        elif row.content == content:
            return vision_out(row, notebook_uuid, connection_names())  # nothing changes
        row.content, row.version, row.updated_at = content, row.version + 1, now
        row.updated_by_id = actor.connection_id
        row.save()
        VisionRevision.objects.create(
            account_id=actor.account_id, vision=row, version=row.version, content=content,
            connection_id=actor.connection_id, operation_id=op_id, created_at=now)
        return vision_out(row, notebook_uuid, connection_names())

    return idempotent(actor=actor, operation_id=op_id, action="vision_update",
                      arguments={"notebookId": notebook_uuid, "content": content,
                                 "expectedVersion": expected_version},
                      decode=VisionOut.model_validate, write=write)


def _locked(actor: Actor, notebook_id: uuid.UUID | None) -> Vision | None:
    """The vision row of the place, if any, with the place's writers serialised: a
    transaction lock on (account, place) first, so two first writers of a place cannot
    both find no row — the second waits, then reads the first one's."""
    transaction_lock(f"grove.vision:{actor.account_id}:{notebook_id or 'account'}")
    return place_filter(Vision.objects.select_for_update(), notebook_id).first()
