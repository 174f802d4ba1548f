"""Ids as every interface takes them (docs/api.md): a note — `<uuid>`, `note:<uuid>`,
`note:<uuid>@<version>` (as recall cites it), and for a read `note:<uuid>@<version>#<n>`
(a passage of that version) —, a notebook (`<uuid>`, `notebook:<uuid>`) or a place
(a notebook, or `"personal"`); their JSON Schema patterns, and the few descriptions and
field rules the argument models share (`notebooks.schemas.arguments`)."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field, PlainSerializer, PlainValidator, WithJsonSchema
from pydantic.json_schema import JsonDict

from grove.kernel.errors import Invalid
from grove.kernel.validation import NONBLANK_TEXT, STORABLE_TEXT

PERSONAL = "personal"

# -- ids -----------------------------------------------------------------------------------

_UUID = r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}"
_NOTE = re.compile(rf"(?:note:)?({_UUID})(?:@([0-9]{{1,9}}))?", re.IGNORECASE)
# A citation: a note, a version, and a passage of that version (`#<position>`).
_CITED = re.compile(rf"(?:note:)?({_UUID})(?:@([0-9]{{1,9}})(?:#([0-9]{{1,6}}))?)?",
                    re.IGNORECASE)
_NOTEBOOK = re.compile(rf"(?:notebook:)?({_UUID})", re.IGNORECASE)
# The same forms as JSON Schema patterns for the documents (the validators above also
# take other letter cases and surrounding spaces; a version is never 0).
NOTE_ID_PATTERN = rf"^(note:)?{_UUID}(@[1-9][0-9]{{0,8}})?$"
NOTEBOOK_ID_PATTERN = rf"^(notebook:)?{_UUID}$"
PLACE_PATTERN = rf"^(personal|(notebook:)?{_UUID})$"
TYPED_ID_PATTERN = (rf"^(note:{_UUID}(@[1-9][0-9]{{0,8}}(#[1-9][0-9]{{0,5}})?)?"
                    rf"|notebook:{_UUID})$")
CITED_NOTE_ID_PATTERN = rf"^(note:)?{_UUID}(@[1-9][0-9]{{0,8}}(#[1-9][0-9]{{0,5}})?)?$"


@dataclass(frozen=True)
class NoteRef:
    """A note named by id, optionally at a version (`note:<uuid>@<version>`)."""

    id: uuid.UUID
    version: int | None = None
    passage: int | None = None  # a passage of that version (1-based), cited as #<n>

    def __str__(self) -> str:
        return (f"note:{self.id}" + (f"@{self.version}" if self.version else "")
                + (f"#{self.passage}" if self.passage else ""))


def _note_ref(value: Any) -> NoteRef:
    if isinstance(value, NoteRef):
        return value
    if isinstance(value, uuid.UUID):
        return NoteRef(value)
    match = _NOTE.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is None or match.group(2) == "0":
        raise ValueError("a note id is <uuid>, note:<uuid> or note:<uuid>@<version>")
    return NoteRef(uuid.UUID(match.group(1)),
                   int(match.group(2)) if match.group(2) else None)


def cited_note(value: str) -> NoteRef:
    """A note, a version of it or a passage of that version, as a reader names it
    (`note:<uuid>[@<version>[#<passage>]]`); ValueError when it is none of those."""
    return _cited_ref(value)


def _cited_ref(value: Any) -> NoteRef:
    if isinstance(value, NoteRef | uuid.UUID):
        return _note_ref(value)
    match = _CITED.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is None or any(part is not None and int(part) == 0
                            for part in match.group(2, 3)):
        raise ValueError("a note id is <uuid>, note:<uuid>, note:<uuid>@<version> or "
                         "note:<uuid>@<version>#<passage>")
    return NoteRef(uuid.UUID(match.group(1)),
                   int(match.group(2)) if match.group(2) else None,
                   int(match.group(3)) if match.group(3) else None)


def _notebook_id(value: Any) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    match = _NOTEBOOK.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is None:
        raise ValueError("a notebook id is <uuid> or notebook:<uuid>")
    return uuid.UUID(match.group(1))


def _place(value: Any) -> uuid.UUID | str:
    if isinstance(value, str) and value.strip().lower() == PERSONAL:
        return PERSONAL
    return _notebook_id(value)


# The forms are spelled out in each field's description (a UUID pattern would cost every
# client ~90 characters per field of its context for what the description already says).
NoteId = Annotated[NoteRef, PlainValidator(_note_ref), PlainSerializer(str, return_type=str),
                   WithJsonSchema({"type": "string", "pattern": NOTE_ID_PATTERN})]
# What a read takes: a note, at a version, or one passage of that version.
CitedNoteId = Annotated[NoteRef, PlainValidator(_cited_ref),
                        PlainSerializer(str, return_type=str),
                        WithJsonSchema({"type": "string", "pattern": CITED_NOTE_ID_PATTERN})]
NotebookId = Annotated[uuid.UUID, PlainValidator(_notebook_id),
                       PlainSerializer(str, return_type=str),
                       WithJsonSchema({"type": "string", "pattern": NOTEBOOK_ID_PATTERN})]
# A place notes live: a notebook, or "personal".
Place = Annotated[uuid.UUID | str, PlainValidator(_place), PlainSerializer(str, return_type=str),
                  WithJsonSchema({"type": "string", "pattern": PLACE_PATTERN})]
# Checked by the route itself (invalid_typed_id); the pattern documents the forms.
TypedId = Annotated[str, WithJsonSchema({"type": "string", "pattern": TYPED_ID_PATTERN})]
# Text fields as the services check them: storable, and (Nonblank) not only whitespace.
TEXT_RULE: JsonDict = {"pattern": STORABLE_TEXT}
Importance = Annotated[float, Field(ge=0, le=1)]
NONBLANK_RULE: JsonDict = {"pattern": NONBLANK_TEXT}

NOTE_ID = "The note, as recall cites it"
NOTE_ID_CHANGE = NOTE_ID + "; its @version acts as expectedVersion."
OPERATION_ID = "A UUID: a retry with it replays the first result."
ONCE = "; each note once"


def place_of(value: uuid.UUID | str | None) -> uuid.UUID | None:
    """A Place for the services: a notebook id, or None for Personal."""
    return None if value is None or value == PERSONAL else uuid.UUID(str(value))


def parse_place(value: str) -> uuid.UUID | None:
    """A place written as text — "personal" or a notebook id — for the services (None is
    Personal); Invalid otherwise. For arguments that arrive as plain strings (prompts)."""
    try:
        return place_of(_place(value))
    except ValueError:
        raise Invalid("A place is a notebook id (`<uuid>`, `notebook:<uuid>`) or "
                      "\"personal\".", code="invalid_arguments") from None


def expected(ref: NoteRef, given: int | None) -> int | None:
    """The version a change expects: `expectedVersion`, or the version in the id."""
    if given is not None and ref.version is not None and given != ref.version:
        raise Invalid(f"{ref} and expectedVersion {given} disagree; send one of them.",
                      code="version_mismatch")
    return given if given is not None else ref.version
