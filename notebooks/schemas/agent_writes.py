"""The arguments of issue 39's agent writes, shared by REST and the MCP tools like
every other (`notebooks.schemas.arguments`): a batch of saves (`remember` with `items`,
`POST /v1/notes/batch`), a partial edit (`edit_note`, `PATCH /v1/notes/{id}` with `edit`)
and the project a tool call names (`project`, as the `X-Grove-Project` header does)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, ValidationError, WithJsonSchema
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonDict, SkipJsonSchema

from grove.kernel.errors import Invalid
from grove.kernel.schemas import In, Uuid
from grove.kernel.validation import NONBLANK_TEXT
from notebooks import edits, rules
from notebooks.schemas.arguments import (
    NOTE_ID_CHANGE,
    OPERATION_ID,
    NoteId,
    NoteUpdateIn,
    Operated,
    RememberIn,
    ToolArguments,
    expected,
)

PROJECT_MAX_CHARS = 200


class ProjectArg(In):
    """A tool that reads or writes a default place also takes the project it works in
    (as the `X-Grove-Project` header does): the granted notebook of that name is its home
    for the call (`grove.identity.selectors.actor_for_project`)."""

    project: Annotated[str, Field(max_length=PROJECT_MAX_CHARS)] | SkipJsonSchema[None] = \
        Field(default=None, description="Your project: the granted notebook of that name "
              "is the default place.")


BATCH_ITEMS_DOC = ("Up to 50 saves in one transaction, each with remember's fields "
                   "(content, kind, notebookId, …); a result per item.")
BatchItems = Annotated[list[dict[str, Any]], WithJsonSchema({
    "type": "array", "items": {"type": "object"}, "minItems": 1,
    "maxItems": rules.BATCH_REMEMBER_MAX})]


def remember_items(items: list[dict[str, Any]]) -> list[dict[str, Any] | Invalid]:
    """A batch's items as `note_remember` keywords, each read by `RememberIn`'s rules —
    or the refusal of one that does not fit them (`invalid_item`, saying where), which
    refuses that item alone."""
    out: list[dict[str, Any] | Invalid] = []
    for item in items:
        if isinstance(item, dict) and "operationId" in item:
            out.append(Invalid("An item takes no operationId: the batch has one.",
                               code="invalid_item"))
            continue
        try:
            out.append(RememberIn.model_validate(item).service_kwargs())
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "item"
            out.append(Invalid(f"{where}: {first['msg']}", code="invalid_item"))
    return out


class RememberBatchIn(Operated):
    items: BatchItems = Field(min_length=1, max_length=rules.BATCH_REMEMBER_MAX,
                              description=BATCH_ITEMS_DOC)

    def service_items(self) -> list[dict[str, Any] | Invalid]:
        return remember_items(self.items)

EditOp = Literal["append", "prepend", "replace_section", "replace_text"]


class EditIn(In):
    """A partial edit of a note's text (`notebooks.edits`)."""

    op: EditOp = Field(description="append/prepend: text as a block at the end/start; "
                       "replace_section: the body under heading becomes text; "
                       "replace_text: the one place find occurs becomes text.")
    text: str = Field(default="", max_length=edits.EDIT_TEXT_MAX_CHARS,
                      description="The text to add or put in (empty: delete).")
    heading: Annotated[str, Field(max_length=edits.HEADING_MAX_CHARS)] \
        | SkipJsonSchema[None] = Field(
        default=None,
        description="replace_section: the heading, e.g. \"Status\" or \"## Status\".")
    find: Annotated[str, Field(max_length=edits.FIND_MAX_CHARS)] | SkipJsonSchema[None] = \
        Field(default=None,
              description="replace_text: the exact text; absent or not unique: refused.")

    # What the service checks across fields (`notebooks.edits.clean_edit`): each op's own
    # fields, and none of another's.
    openapi_rules: ClassVar[JsonDict] = {"allOf": [
        {"if": {"properties": {"op": {"enum": ["append", "prepend"]}}},
         "then": {"required": ["text"], "properties": {"text": {"pattern": NONBLANK_TEXT}},
                  "not": {"anyOf": [
                      {"required": [name], "properties": {name: {"type": "string"}}}
                      for name in ("heading", "find")]}}},
        {"if": {"properties": {"op": {"const": "replace_section"}}},
         "then": {"required": ["heading"],
                  "properties": {"heading": {"type": "string", "pattern": NONBLANK_TEXT}},
                  "not": {"required": ["find"], "properties": {"find": {"type": "string"}}}}},
        {"if": {"properties": {"op": {"const": "replace_text"}}},
         "then": {"required": ["find"],
                  "properties": {"find": {"type": "string", "minLength": 1}},
                  "not": {"required": ["heading"],
                          "properties": {"heading": {"type": "string"}}}}}]}

    def service_edit(self) -> dict[str, Any]:
        """The edit as `notebooks.edits.clean_edit` takes it."""
        return {name: value for name in ("op", "text", "heading", "find")
                if (value := getattr(self, name)) is not None}


class NotePatchIn(NoteUpdateIn):
    """`PATCH /v1/notes/{id}`: a correction, whose text may be a partial `edit`."""

    edit: EditIn | SkipJsonSchema[None] = Field(
        default=None, description="A partial edit of the text instead of content.")

    openapi_rules: ClassVar[JsonDict] = {
        **NoteUpdateIn.openapi_rules,
        "anyOf": [{"required": [to_camel(name)]}
                  for name in (*NoteUpdateIn.CHANGEABLE, "edit")],
        # The whole text or a part of it, not both (`edit_with_content`).
        "not": {"required": ["content", "edit"],
                "properties": {"content": {"type": "string"}, "edit": {"type": "object"}}}}

    def changes(self) -> dict[str, Any]:
        edit = {} if self.edit is None else {"edit": self.edit.service_edit()}
        return super().changes() | edit


class _EditedNote(In):
    # Listed last among the bases, so noteId comes first in the schema.
    note_id: NoteId = Field(description=NOTE_ID_CHANGE)


class EditNoteArgs(ToolArguments, EditIn, _EditedNote):
    """`edit_note`: the note, its version, and the edit's fields flat beside them."""

    operation_id: Uuid | None = Field(default=None, description=OPERATION_ID)
    expected_version: int | None = Field(default=None, ge=1, description="The version you "
                                         "read; omitted: the text as it is now.")

    def service_kwargs(self) -> dict[str, Any]:
        return {"note_id": self.note_id.id, "edit": self.service_edit(),
                "expected_version": expected(self.note_id, self.expected_version)}
