"""REST routes for notes, notebooks, recall and search (`/v1`, see `grove.interfaces.rest`).

Each route parses its input, calls one service or selector and wraps the result in the
envelope; every rule lives in the service (STYLE §1). Request bodies are camelCase and
refuse unknown fields; omitted and null are different where the service says so.
"""

from __future__ import annotations

import itertools
import json
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any, Literal

from asgiref.sync import sync_to_async
from django.http import FileResponse, HttpRequest, StreamingHttpResponse
from django.utils import timezone
from ninja import Query, Status
from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from grove.interfaces.rest import (
    ERRORS,
    KEY_OR_SESSION,
    WRITE_ERRORS,
    ApiRouter,
    Ok,
    OkList,
    actor_of,
    listed,
    ok,
    operation_id,
    optional_body,
)
from grove.kernel.errors import Invalid
from grove.kernel.schemas import ListMeta, Out
from notebooks import rules, selectors, services
from notebooks.schemas.agent_writes import NotePatchIn, RememberBatchIn
from notebooks.schemas.arguments import (
    AsOfQuery,
    BatchIn,
    MoveIn,
    NotebookCreateIn,
    NotebookListQuery,
    NotebookUpdateIn,
    NoteFilters,
    Operated,
    RecallIn,
    RememberIn,
    RestoreRevisionIn,
    SearchIn,
    TypedId,
    cited_note,
    place_of,
)
from notebooks.schemas.notes import (
    BatchOut,
    BatchSavedOut,
    NotebookOut,
    NoteOut,
    NoteRead,
    RecallItem,
    RecallMeta,
    RememberOut,
    RevisionOut,
    RevisionRead,
    SearchItem,
    SearchPage,
    SubtreeCounts,
)
from notebooks.schemas.related import RelatedNote, RelatedQuery
from notebooks.schemas.truth import PendingRef
from notebooks.selectors import recall as recall_service
from notebooks.selectors import search
from notebooks.services import portability
from notebooks.services.markdown_export import markdown_export

router = ApiRouter()

# -- notes -----------------------------------------------------------------------------------


class RememberMeta(Out):
    similar: list[uuid.UUID]  # likely duplicates of the saved note in its notebook
    # Of those, the ones it likely replaces (same kind, other words; `findSimilar`), and
    # the note `supersedes` archived.
    replaces: list[uuid.UUID] = Field(default_factory=list, exclude_if=lambda v: not v)
    superseded: uuid.UUID | None = Field(default=None, exclude_if=lambda v: v is None)


class RememberEnvelope(Ok[NoteOut]):
    meta: RememberMeta


@router.post("/notes", tags=["notes"], response={201: RememberEnvelope, 200: RememberEnvelope,
                                                  202: Ok[PendingRef], **WRITE_ERRORS},
             summary="Remember: save a note (201), or update the live handoff of its task (200)")
def note_remember(request: HttpRequest, payload: RememberIn) -> Any:
    """`meta.similar`: likely duplicates of what was saved (the save is never refused).
    202: held for the owner instead — the notebook checks agents' writes against its
    declared truth, and this one contradicts it (or could not be checked); `data` is the
    held write (`verdict`, the declared notes it `contradicts` that the caller may read)."""
    result: RememberOut = services.note_remember(
        actor=actor_of(request), operation_id=operation_id(request, payload.operation_id),
        **payload.service_kwargs())
    if result.note is None:
        return Status(202, ok(result.pending_revision))
    return Status(201 if result.created else 200,
                  ok(result.note, meta=RememberMeta(similar=result.similar,
                                                    replaces=result.replaces,
                                                    superseded=result.superseded)))


@router.post("/notes/batch", tags=["notes"], response={200: Ok[BatchSavedOut], **WRITE_ERRORS},
             summary="Remember up to 50 notes in one transaction, with a result per item")
def note_remember_batch(request: HttpRequest, payload: RememberBatchIn) -> Any:
    """Each item is a `POST /v1/notes` body (without operationId) and gets what that
    save would: `status` created, updated (its task's live handoff), held (for the
    owner) or refused (`error`: the code and message a single save gives — nothing else
    is refused with it). The batch's operation id replays every item's result."""
    return ok(services.note_remember_batch(
        actor=actor_of(request), operation_id=operation_id(request, payload.operation_id),
        items=payload.service_items()))


def _notebook_filter(value: uuid.UUID | str | None) -> Any:
    return rules.EVERYWHERE if value is None else place_of(value)


class SearchMeta(ListMeta):
    # The order of the page: the sort asked for, or updated_desc for a query too common
    # to rank (notebooks.selectors.search).
    sort: str


class SearchList(OkList[SearchItem]):
    meta: SearchMeta


def _page(page: SearchPage) -> dict[str, Any]:
    return ok(page.data, meta=SearchMeta(**dict(page.meta), sort=page.sort))


@router.get("/notes", tags=["notes"], response={200: SearchList, **ERRORS},
            summary="List notes with filters, newest first, by signed cursor")
def note_list(request: HttpRequest, filters: Query[NoteFilters]) -> Any:
    return _page(search.note_search(
        actor=actor_of(request), notebook_id=_notebook_filter(filters.notebook_id),
        kinds=filters.kind, source_agent=filters.source_agent, tag=filters.tag,
        updated_after=filters.updated_after, lifetime=filters.lifetime, status=filters.status,
        sort=filters.sort, cursor=filters.cursor, limit=filters.limit, marks=True,
        as_of=filters.as_of))


@router.post("/notes/search", tags=["notes"],
             response={200: SearchList, **ERRORS},
             summary="Library search: query in the body, filters, sorts, signed cursor")
def note_search(request: HttpRequest, payload: SearchIn) -> Any:
    return _page(search.note_search(actor=actor_of(request), marks=True,
                                    **payload.service_kwargs()))


@router.get("/notes/{note_id}/revisions", tags=["notes"],
            response={200: OkList[RevisionOut], **ERRORS},
            summary="A note's revisions, newest first (full snapshots)")
def note_revisions(request: HttpRequest, note_id: uuid.UUID) -> Any:
    revisions = selectors.note_revisions(actor=actor_of(request), note_id=note_id)
    return listed([RevisionOut.of(r) for r in revisions])


@router.post("/notes/{note_id}/restore-revision", tags=["notes"],
             response={200: Ok[NoteOut], **WRITE_ERRORS},
             summary="Write a new revision from an older one (durable: handoff → fact)")
def note_restore_revision(request: HttpRequest, note_id: uuid.UUID,
                          payload: RestoreRevisionIn) -> Any:
    return ok(services.note_restore_revision(
        actor=actor_of(request), operation_id=operation_id(request, payload.operation_id),
        note_id=note_id, revision=payload.revision, durable=payload.durable,
        expected_version=payload.expected_version))


@router.post("/notes/archive", tags=["notes"], response={200: Ok[BatchOut], **WRITE_ERRORS},
             summary="Archive notes (reversible); per-item results")
def note_archive(request: HttpRequest, payload: BatchIn) -> Any:
    return ok(services.note_archive(actor=actor_of(request), items=payload.service_items(),
                                    operation_id=operation_id(request, payload.operation_id)))


@router.post("/notes/restore", tags=["notes"], response={200: Ok[BatchOut], **WRITE_ERRORS},
             summary="Restore archived or expired notes; per-item results")
def note_restore(request: HttpRequest, payload: BatchIn) -> Any:
    return ok(services.note_restore(actor=actor_of(request), items=payload.service_items(),
                                    operation_id=operation_id(request, payload.operation_id)))


@router.post("/notes/forget", tags=["notes"], response={200: Ok[BatchOut], **WRITE_ERRORS},
             summary="Forget (soft-delete) notes; per item deleted | not_found | version_conflict")
def note_forget(request: HttpRequest, payload: BatchIn) -> Any:
    return ok(services.note_forget(actor=actor_of(request), items=payload.service_items(),
                                   operation_id=operation_id(request, payload.operation_id)))


@router.post("/notes/move", tags=["notes"], response={200: OkList[NoteOut], **WRITE_ERRORS},
             summary="Move notes to a notebook (null = Personal): all or nothing")
def note_move(request: HttpRequest, payload: MoveIn) -> Any:
    return listed(services.note_move(
        actor=actor_of(request), operation_id=operation_id(request, payload.operation_id),
        **payload.service_kwargs()))


@router.post("/notes/{note_id}/retry-indexing", tags=["notes"],
             response={200: Ok[NoteOut], **WRITE_ERRORS},
             summary="Queue semantic indexing again for a note whose indexing failed")
def note_retry_indexing(request: HttpRequest, note_id: uuid.UUID) -> Any:
    return ok(services.note_retry_indexing(actor=actor_of(request), note_id=note_id))


# Routes with a note id in the path come after the fixed paths above (Django tries
# patterns in order, and /notes/{note_id} would otherwise swallow /notes/forget).


@router.get("/notes/{note_id}", tags=["notes"],
            response={200: Ok[NoteRead | RevisionRead], **ERRORS},
            summary="Get a note, with what declared ground truth says of it (asOf: the "
            "revision it had then)")
def note_get(request: HttpRequest, note_id: uuid.UUID, when: Query[AsOfQuery]) -> Any:
    return ok(selectors.note_read(actor=actor_of(request), note_id=note_id, as_of=when.as_of))


@router.get("/notes/{note_id}/related", tags=["notes"],
            response={200: OkList[RelatedNote], **ERRORS},
            summary="The notes linked to and from a note, to depth 2, by signed cursor")
def note_related(request: HttpRequest, note_id: uuid.UUID, query: Query[RelatedQuery]) -> Any:
    found = selectors.related(actor=actor_of(request), note_id=note_id, depth=query.depth,
                              limit=query.limit, cursor=query.cursor)
    return ok(found.data, meta=found.meta)


@router.patch("/notes/{note_id}", tags=["notes"], response={200: Ok[NoteOut], **WRITE_ERRORS},
              summary="Correct a note: omitted fields stay; expectedVersion guards races")
def note_update(request: HttpRequest, note_id: uuid.UUID, payload: NotePatchIn) -> Any:
    changes = payload.changes()
    update = services.note_edit if "edit" in changes else services.note_update
    return ok(update(
        actor=actor_of(request), operation_id=operation_id(request, payload.operation_id),
        note_id=note_id, expected_version=payload.expected_version, **changes))


# -- notebooks -------------------------------------------------------------------------------


@router.get("/notebooks", tags=["notebooks"], response={200: OkList[NotebookOut], **ERRORS},
            summary="The granted notebooks (a hidden parent stays hidden)")
def notebook_list(request: HttpRequest, filters: Query[NotebookListQuery]) -> Any:
    page, available, next_cursor = selectors.notebook_page(
        actor=actor_of(request), include_archived=filters.include_archived,
        cursor=filters.cursor, limit=filters.limit)
    return listed(page, available=available, limit=filters.limit, next_cursor=next_cursor)


@router.post("/notebooks", tags=["notebooks"], response={201: Ok[NotebookOut], **WRITE_ERRORS},
             summary="Create a notebook (at the root or inside parentId)")
def notebook_create(request: HttpRequest, payload: NotebookCreateIn) -> Any:
    return Status(201, ok(services.notebook_create(
        actor=actor_of(request), operation_id=operation_id(request, payload.operation_id),
        name=payload.name, parent_id=payload.parent_id)))


@router.patch("/notebooks/{notebook_id}", tags=["notebooks"], auth=KEY_OR_SESSION,
              response={200: Ok[NotebookOut], **WRITE_ERRORS},
              summary="Rename or move a notebook (parentId null = root)")
def notebook_update(request: HttpRequest, notebook_id: uuid.UUID,
                    payload: NotebookUpdateIn) -> Any:
    return ok(services.notebook_update(
        actor=actor_of(request), operation_id=operation_id(request, payload.operation_id),
        notebook_id=notebook_id, **payload.changes()))


@router.get("/notebooks/{notebook_id}/counts", tags=["notebooks"],
            response={200: Ok[SubtreeCounts], **ERRORS},
            summary="What archiving, restoring or deleting this subtree would act on")
def notebook_counts(request: HttpRequest, notebook_id: uuid.UUID) -> Any:
    return ok(selectors.notebook_subtree_counts(actor=actor_of(request),
                                                notebook_id=notebook_id))


SUBTREE_ACTIONS = {"archive": services.notebook_archive, "restore": services.notebook_restore,
                   "delete": services.notebook_delete}


@router.post("/notebooks/{notebook_id}/{action}", tags=["notebooks"], auth=KEY_OR_SESSION,
             response={200: Ok[SubtreeCounts], **WRITE_ERRORS},
             summary="Archive, restore or delete a notebook subtree (website session only)")
def notebook_subtree(request: HttpRequest, notebook_id: uuid.UUID,
                     action: Literal["archive", "restore", "delete"]) -> Any:
    """The body is optional: `{"operationId": …}` or the `Idempotency-Key` header."""
    body = optional_body(request, Operated)
    return ok(SUBTREE_ACTIONS[action](
        actor=actor_of(request), notebook_id=notebook_id,
        operation_id=operation_id(request, body.operation_id if body else None)))


# -- recall and typed ids --------------------------------------------------------------------


class RecallApiMeta(RecallMeta):
    # `timings: true` only (REST): the stages are named in docs/api.md.
    timings: dict[str, float] | SkipJsonSchema[None] = Field(
        default=None, exclude_if=lambda v: v is None,
        description="Milliseconds per stage of this recall (`timings: true` only).")


class RecallEnvelope(Ok[list[RecallItem]]):
    meta: RecallApiMeta


@router.post("/recall", tags=["recall"], response={200: RecallEnvelope, **ERRORS},
             summary="Recall: the notes relevant to a query within a budget, or the profile")
def recall(request: HttpRequest, payload: RecallIn) -> Any:
    result = recall_service.recall(actor=actor_of(request), **payload.service_kwargs())
    return ok(result.data, meta=RecallApiMeta.model_validate(result.meta, from_attributes=True))


@router.get("/get/{typed_id}", tags=["recall"],
            response={200: Ok[NoteRead | NotebookOut | RevisionRead], **ERRORS},
            summary="The full record for a typed id: note:<uuid>[@<version>[#<passage>]] or "
            "notebook:<uuid>")
def get_typed(request: HttpRequest, typed_id: TypedId) -> Any:
    """The current version is the note itself (with its marks), a past one that revision
    (with the marks of its text); a version the note never had is 404
    `version_not_found` — as over MCP."""
    actor = actor_of(request)
    kind, _, rest = typed_id.partition(":")
    if kind == "note":
        try:
            ref = cited_note(typed_id)
        except ValueError:
            raise Invalid("A note's typed id is note:<uuid>, note:<uuid>@<version> or "
                          "note:<uuid>@<version>#<passage> (#: %23 in a URL).",
                          code="invalid_typed_id") from None
        return ok(selectors.note_read(actor=actor, note_id=ref.id, version=ref.version,
                                      passage=ref.passage))
    if kind == "notebook":
        return ok(selectors.notebook_out(actor=actor, notebook_id=rest))
    raise Invalid("A typed id looks like note:<uuid>, note:<uuid>@<version> or "
                  "notebook:<uuid>.", code="invalid_typed_id")


# -- export ----------------------------------------------------------------------------------


@router.get("/export", tags=["export"], response=ERRORS, auth=KEY_OR_SESSION,
            openapi_extra={"responses": {200: {
                "description": "NDJSON: one JSON object per line with a `type` field",
                "content": {"application/x-ndjson": {"schema": {"type": "string"}}}}}},
            summary="Export the caller's notebooks, notes and revisions as NDJSON")
def export(request: HttpRequest) -> StreamingHttpResponse:
    records = portability.export_records(actor=actor_of(request))
    first = next(records)  # permissions are checked before the response starts
    lines = (json.dumps(record, separators=(",", ":")) + "\n"
             for record in itertools.chain([first], records))
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response = StreamingHttpResponse(_streamed(request, lines),
                                     content_type="application/x-ndjson")
    response["Content-Disposition"] = f'attachment; filename="grove-export-{stamp}.ndjson"'
    return response


@router.get("/export/markdown", tags=["export"], response=ERRORS, auth=KEY_OR_SESSION,
            openapi_extra={"responses": {200: {
                "description": "A zip: one Markdown file per note with YAML front matter "
                               "(id, kind, tags, notebook path, version, status, dates), "
                               "notebooks as folders",
                "content": {"application/zip": {"schema": {"type": "string",
                                                           "format": "binary"}}}}}},
            summary="Export the caller's notes as Markdown files in a zip")
def export_markdown(request: HttpRequest) -> FileResponse:
    """Written to a temporary file that spills to disk past 16 MB (memory stays flat),
    then sent; `grove ingest` takes the zip back."""
    spool = tempfile.SpooledTemporaryFile(max_size=16 * 1024 * 1024)  # noqa: SIM115
    markdown_export(actor=actor_of(request), out=spool)
    spool.seek(0)
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    return FileResponse(spool, as_attachment=True, content_type="application/zip",
                        filename=f"grove-markdown-{stamp}.zip")


def _streamed(request: HttpRequest, lines: Iterator[str]) -> Any:
    """Under ASGI, read the (database-backed) generator a chunk at a time in the request's
    thread instead of letting Django buffer the whole export first."""
    from django.core.handlers.asgi import ASGIRequest

    if not isinstance(request, ASGIRequest):
        return lines

    def take() -> str:
        return "".join(itertools.islice(lines, 200))

    async def chunks() -> AsyncIterator[str]:
        while chunk := await sync_to_async(take, thread_sensitive=True)():
            yield chunk

    return chunks()
