import json
import re
import uuid
from collections.abc import Sequence
from typing import Any, Self, cast

from django import forms
from django.urls import reverse

from grove.kernel.errors import Invalid
from grove.kernel.forms import IdChoiceField
from grove.kernel.paging import CURSOR_MAX_CHARS
from grove.kernel.validation import TIME_ZONE_MAX_CHARS, clean_time_zone
from notebooks import rules
from notebooks.models import (
    NAME_MAX_CHARS,
    SOURCE_AGENT_MAX_CHARS,
    TAG_MAX_CHARS,
    VISION_MAX_CHARS,
    Kind,
)
from notebooks.rules import SEARCH_QUERY_MAX_CHARS


class _PicksANotebook(forms.Form):
    """A form with one notebook picker, `PLACE` (its empty choice labelled `EMPTY`):
    `paths` are the (notebook, path) choices to offer, or None on a post."""

    PLACE: str
    EMPTY: str

    def __init__(self, *args: Any, paths: Sequence[tuple[Any, str]] | None = None,
                 **kwargs: Any):
        super().__init__(*args, **kwargs)
        field = cast(forms.ChoiceField, self.fields[self.PLACE])
        if paths is None:
            # Any notebook id: the service checks it (notebook_not_found, _archived).
            self.fields[self.PLACE] = IdChoiceField(required=False, label=field.label)
            return
        field.choices = [("", self.EMPTY)] + [(str(nb.id), path) for nb, path in paths]

    def shown(self, paths: Sequence[tuple[Any, str]]) -> Self:
        """This posted form again with the choices to render, its errors kept."""
        again = type(self)(self.data, paths=paths)
        again.is_valid()
        for error in self.non_field_errors():
            again.add_error(None, error)
        return again


# -- tags ------------------------------------------------------------------------------------

# Room for TAGS_MAX tags of TAG_MAX_CHARS with a separator and a `#` each, and slack.
TAGS_FIELD_MAX_CHARS = rules.TAGS_MAX * (rules.TAG_MAX_CHARS + 3) + 40
_TAG_SEPARATORS = re.compile(r"[,\s]+")


class TagsField(forms.CharField):
    """A note's tags typed on one line — `work, big-idea #later` — separated by commas
    or spaces (a tag is one word: `rules.clean_tag`), cleaned to the sorted list the
    note keeps; shown back as `work, big-idea, later`."""

    def __init__(self, **kwargs: Any):
        super().__init__(required=False, max_length=TAGS_FIELD_MAX_CHARS, label="Tags",
                         help_text="Labels, separated by commas or spaces.",
                         widget=forms.TextInput(attrs={"placeholder": "work, ideas",
                                                       "autocomplete": "off",
                                                       "class": "tags-input"}), **kwargs)

    def prepare_value(self, value: Any) -> Any:
        return ", ".join(value) if isinstance(value, list | tuple) else value

    def clean(self, value: Any) -> list[str]:
        text = super().clean(value)
        try:
            return rules.clean_tags([t for t in _TAG_SEPARATORS.split(text) if t])
        except Invalid as exc:
            raise forms.ValidationError(exc.message, code=exc.code) from None


# -- the editor: a title line and the text below it ------------------------------------------

_LINE_BREAK = re.compile(r"\r\n?|\n")


def split_title(content: str) -> tuple[str, str]:
    """A note's text as the editor shows it: its first line (the title, exactly as
    written, markdown marks and all) and the rest after that line break."""
    title, *rest = _LINE_BREAK.split(content, maxsplit=1)
    return title, rest[0] if rest else ""


def join_title(title: str, body: str) -> str:
    """The text a title line and a body make (`split_title` undone): the title as the
    first line, unchanged. Line breaks become "\n" — a browser sends a textarea's as
    "\r\n" — so a note written elsewhere comes back from the editor as it was."""
    body = _LINE_BREAK.sub("\n", body)
    return f"{title}\n{body}" if title else body


# The editor's fields check no length themselves (the request body limit caps the work):
# the note's text — title and lines together — is held to its kind's limit by the save,
# whose one message the form shows (`rules.clean_content`).
def _title_field(**attrs: str) -> forms.CharField:
    return forms.CharField(
        required=False, strip=False, label="Title",
        help_text="The note's first line, as written: what the library lists it by "
                  "(# makes it a heading).",
        widget=forms.TextInput(attrs={"placeholder": "Title", "autocomplete": "off",
                                      "class": "editor-title", **attrs}))


def _text_field() -> forms.CharField:
    # Not stripped: the lines below the title keep their indentation and blank lines.
    return forms.CharField(required=False, strip=False,
                           label="Content", widget=forms.Textarea(attrs={
                               "rows": 18, "class": "editor-text", "spellcheck": "true"}))


class _Editor(forms.Form):
    """A form with the editor's two text fields, `title` and `content` (the lines
    below it); `cleaned_data["text"]` is the note's text they make (`join_title`).

    The fields state the limit of the note's kind (`rules.content_max_chars`, the one
    the save checks) as their `maxlength`, and carry every kind's limit for the
    editor's counter (static/grove/editor.js) to follow a change of kind. The fields
    check no length of their own: text over the limit reaches the save and gets its
    one message (the request body limit, `GROVE_API_MAX_BODY`, caps the work)."""

    EDITOR_FIELDS = ("title", "content")
    REQUIRE_TEXT = True

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        limits = rules.content_limits()
        kind = self.kind_written()
        self.limit = limits[kind] if kind is not None else max(limits.values())
        self.limit_shown = f"{self.limit:,}"
        self.limit_kind = kind or "note"
        for name in self.EDITOR_FIELDS:
            self.fields[name].widget.attrs["maxlength"] = str(self.limit)
        self.fields["content"].widget.attrs.update({
            "data-limits": json.dumps(limits, separators=(",", ":")),
            "aria-describedby": "content-count",
            # Typing `[[` suggests notes by name from here (static/grove/suggest.js).
            "data-titles": reverse("note-titles"), "aria-autocomplete": "list"})

    def kind_written(self) -> str | None:
        """The kind the note is being written as — as posted, else as shown — or None
        when the form does not say (the preview of a form without a kind)."""
        field = self.fields.get("kind")
        wanted = self.data.get("kind") if self.is_bound else None
        if wanted not in Kind.values:
            wanted = self.initial.get("kind") or (field.initial if field else None)
        return str(wanted) if wanted in Kind.values else None

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        title = data.get("title", "")
        if "title" in data and ("\n" in title or "\r" in title):
            self.add_error("title", "The title is one line.")
        elif "content" in data:
            data["text"] = join_title(title, data["content"])
            if self.REQUIRE_TEXT and not data["text"].strip():
                raise forms.ValidationError("Write something first: a title or some text.")
        return data

    def other_fields(self) -> list[forms.BoundField]:
        """The visible fields besides the editor's own (kind, notebook, task id)."""
        return [f for f in self.visible_fields() if f.name not in self.EDITOR_FIELDS]


class NoteForm(_Editor, _PicksANotebook):
    # The operation id travels with the form, so a double submit saves once.
    operation_id = forms.UUIDField(widget=forms.HiddenInput, initial=uuid.uuid4)
    title = _title_field(autofocus="")
    content = _text_field()
    kind = forms.ChoiceField(choices=Kind.choices, initial=Kind.NOTE)
    notebook = forms.ChoiceField(required=False)
    tags = TagsField()
    task_id = forms.CharField(required=False, label="Task id (handoffs)")
    PLACE, EMPTY = "notebook", "Personal"


class NotebookForm(_PicksANotebook):
    operation_id = forms.UUIDField(widget=forms.HiddenInput, initial=uuid.uuid4)
    name = forms.CharField(max_length=NAME_MAX_CHARS)
    parent = forms.ChoiceField(required=False)
    PLACE, EMPTY = "parent", "(top level)"


class NoteEditForm(_Editor):
    """A correction of the note's content and kind, guarded by the version it was made
    from: a stale edit is a conflict that shows the newer text and keeps the draft."""

    operation_id = forms.UUIDField(widget=forms.HiddenInput, initial=uuid.uuid4)
    expected_version = forms.IntegerField(widget=forms.HiddenInput, min_value=1)
    title = _title_field()
    content = _text_field()
    kind = forms.ChoiceField(choices=Kind.choices)
    tags = TagsField()
    # Shown only when other notes link here (the note page's `backlinks`): a new title
    # rewrites their links to it (`note_update(relink=True)`).
    relink = forms.BooleanField(required=False, initial=True,
                                label="Update the links to this note if its title changes")

    def other_fields(self) -> list[forms.BoundField]:
        return [f for f in super().other_fields() if f.name != "relink"]


class PreviewForm(_Editor):
    """What the editor's preview renders: the same two fields, joined the same way, and
    the kind the note is written as (whose limit the preview holds it to)."""

    REQUIRE_TEXT = False

    title = _title_field()
    content = _text_field()
    kind = forms.ChoiceField(choices=Kind.choices, required=False)


class TaskTickForm(forms.Form):
    """One task-list box on the note page: tick (1) or clear (0) it, at the version shown."""

    operation_id = forms.UUIDField()
    expected_version = forms.IntegerField(min_value=1)
    done = forms.TypedChoiceField(choices=[("1", "tick"), ("0", "clear")],
                                  coerce=lambda value: value == "1")


class ConfirmForm(forms.Form):
    operation_id = forms.UUIDField(widget=forms.HiddenInput, initial=uuid.uuid4, required=False)
    confirm = forms.BooleanField(required=True, label="Yes, delete this note")


class LibraryForm(forms.Form):
    """The library's query string: search, place, filters, sort and the page cursor.
    Values are checked again by the search selector (the same one the API uses)."""

    # Not stripped: a space after the last word says it is complete (no prefix match).
    q = forms.CharField(required=False, max_length=SEARCH_QUERY_MAX_CHARS, strip=False)
    notebook = forms.CharField(required=False, max_length=64)
    # "1": the notebook's sub-notebooks too (a value, not a bool, so it goes back into
    # the query string as it came).
    sub = forms.ChoiceField(required=False, choices=[("", "This notebook"),
                                                     ("1", "Include sub-notebooks")])
    kind = forms.ChoiceField(required=False, choices=[("", "Any kind"), *Kind.choices])
    agent = forms.CharField(required=False, max_length=SOURCE_AGENT_MAX_CHARS, label="Saved by")
    tag = forms.CharField(required=False, max_length=TAGS_FIELD_MAX_CHARS)  # checked: clean_tag
    pinned = forms.ChoiceField(required=False, choices=[("", "Any"), ("1", "Pinned")])
    lifetime = forms.ChoiceField(required=False, choices=[
        ("", "Any lifetime"), ("permanent", "Permanent"), ("ephemeral", "Ephemeral")])
    status = forms.ChoiceField(required=False, choices=[
        ("active", "Active"), ("archived", "Archived"), ("expired", "Expired")])
    sort = forms.ChoiceField(required=False, choices=[
        ("", "Best first"), ("relevance", "Relevance"), ("updated_desc", "Recently updated"),
        ("updated_asc", "Least recently updated"), ("created_desc", "Recently created")])
    cursor = forms.CharField(required=False, max_length=CURSOR_MAX_CHARS)
    shown = forms.IntegerField(required=False, min_value=0, max_value=10_000_000)


class NoteMoveForm(_PicksANotebook):
    operation_id = forms.UUIDField(widget=forms.HiddenInput, initial=uuid.uuid4)
    destination = forms.ChoiceField(required=False, label="Move to")
    # Where the note is (for the Undo of this move); and from Undo, moving back: the
    # version the move made, so a change since wins.
    origin = forms.UUIDField(widget=forms.HiddenInput, required=False)
    expected_version = forms.IntegerField(widget=forms.HiddenInput, required=False,
                                          min_value=1)
    # Links that name the note by its path (`[[Projects/Plan]]`, `../Plan.md`) follow
    # it (`note_move(relink=True)`); on by default, as for a rename.
    relink = forms.BooleanField(required=False, initial=True,
                                label="Update links that name its old place")
    PLACE, EMPTY = "destination", "Personal"


class FencedActionForm(forms.Form):
    """A one-button action on a note (archive, restore, Recently deleted's restore):
    its operation id, and — from Undo — the version the undone change made."""

    operation_id = forms.UUIDField(required=False)
    expected_version = forms.IntegerField(required=False, min_value=1)


class PinForm(FencedActionForm):
    """Pin (1) or unpin (0) a note, at the version the page showed."""

    pinned = forms.TypedChoiceField(choices=[("1", "pin"), ("0", "unpin")],
                                    coerce=lambda value: value == "1")


class TrashForm(forms.Form):
    """Recently deleted's query string: the page cursor (checked again by the selector)."""

    cursor = forms.CharField(required=False, max_length=CURSOR_MAX_CHARS)


class DiffForm(forms.Form):
    a = forms.IntegerField(min_value=1, label="From version")
    b = forms.IntegerField(min_value=1, label="To version")


class NotebookEditForm(_PicksANotebook):
    """Rename and/or move a notebook (the parent picker excludes its own subtree)."""

    operation_id = forms.UUIDField(widget=forms.HiddenInput, initial=uuid.uuid4)
    name = forms.CharField(max_length=NAME_MAX_CHARS)
    parent = forms.ChoiceField(required=False, label="Inside")
    PLACE, EMPTY = "parent", "(top level)"


class NotebookConfirmForm(forms.Form):
    operation_id = forms.UUIDField(widget=forms.HiddenInput, initial=uuid.uuid4, required=False)
    confirm = forms.BooleanField(required=True, label="Yes, I have read the counts above")


class ImportForm(forms.Form):
    file = forms.FileField(label="Export file (NDJSON)")


# -- what agents read first ----------------------------------------------------------------


class VisionForm(forms.Form):
    """A vision's new text, guarded by the version it was made from (0: none yet). Empty
    clears it. The exact limit and its message come from the service (`clean_vision`);
    this only caps the work."""

    operation_id = forms.UUIDField(widget=forms.HiddenInput, initial=uuid.uuid4)
    expected_version = forms.IntegerField(widget=forms.HiddenInput, min_value=0)
    content = forms.CharField(required=False, strip=False, max_length=VISION_MAX_CHARS + 1000,
                              widget=forms.Textarea(attrs={"rows": 6}))


class BriefForm(forms.Form):
    """"What your agents read": the query string (bookmarkable). `connection` is a
    connection id or "website" (the owner's own brief); `notebook` "", "personal" or a
    notebook id. The brief selector checks every value again."""

    connection = forms.CharField(required=False, max_length=64)
    notebook = forms.CharField(required=False, max_length=64)
    focus = forms.CharField(required=False, max_length=rules.BRIEF_FOCUS_MAX_CHARS)
    tz = forms.CharField(required=False, max_length=TIME_ZONE_MAX_CHARS, label="Time zone")
    budget = forms.IntegerField(required=False, min_value=rules.BRIEF_MIN_TOKENS,
                                max_value=rules.BRIEF_MAX_TOKENS, label="Budget (tokens)")

    def clean_tz(self) -> str:
        zone = self.cleaned_data["tz"].strip() or "UTC"
        try:
            clean_time_zone(zone)
        except Invalid as exc:
            raise forms.ValidationError(exc.message) from None
        return zone


class ActivityForm(forms.Form):
    """The Activity page's query string: who (a connection id, "website" or all), since
    when (a period, or a day), and the page cursor. `activity_list` checks them again."""

    PERIODS = {"today": 0, "7d": 7, "30d": 30}

    connection = forms.CharField(required=False, max_length=64)
    since = forms.ChoiceField(required=False, choices=[
        ("today", "Today"), ("7d", "Last 7 days"), ("30d", "Last 30 days")])
    day = forms.DateField(required=False, label="Since the day")
    cursor = forms.CharField(required=False, max_length=CURSOR_MAX_CHARS)
    shown = forms.IntegerField(required=False, min_value=0, max_value=10_000_000)
    limit = forms.IntegerField(required=False, min_value=1, max_value=rules.ACTIVITY_MAX_LIMIT)


# -- the library's bulk bar ----------------------------------------------------------------------


class _NotesField(forms.Field):
    """The ticked notes of the library: each box's value is `<note id>@<version shown>`
    (the version is the fence: a note changed since is left as it is), or a bare id."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value: Any) -> list[dict[str, Any]]:
        values = value or []
        if len(values) > rules.BATCH_MAX:
            raise forms.ValidationError(
                f"At most {rules.BATCH_MAX} notes at a time: select fewer and do the rest "
                "next.", code="batch_too_large")
        items = []
        for raw in values:
            note_id, _, version = str(raw).partition("@")
            try:
                items.append({"id": uuid.UUID(note_id),
                              "expectedVersion": int(version) if version else None})
            except ValueError:
                raise forms.ValidationError("That is not a note of this list.",
                                            code="invalid_item") from None
        return items


class BulkForm(forms.Form):
    """The bulk bar (and a drop onto the sidebar): the ticked notes and what to do with
    them — the pressed button's `action` — and, for a move, where; for a tag, which.
    `problem()` is the first thing wrong, as the one error a page shows."""

    ACTIONS = ("archive", "restore", "delete", "move", "tag", "untag")

    operation_id = forms.UUIDField()
    action = forms.ChoiceField(choices=[(action, action) for action in ACTIONS])
    note = _NotesField(required=False)
    # "personal", or a notebook id (the service checks it).
    destination = forms.CharField(required=False, max_length=64)
    tag = forms.CharField(required=False, max_length=TAG_MAX_CHARS + 8)
    next = forms.CharField(required=False, max_length=4000)  # the library page to go back to

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if "note" in data and not data["note"]:
            self.add_error("note", forms.ValidationError(
                "Tick the notes to change first.", code="empty_batch"))
        action = data.get("action")
        if action == "move":
            place = data.get("destination", "")
            if not place:
                self.add_error("destination", forms.ValidationError(
                    "Pick the notebook to move them to.", code="destination_required"))
            elif place != "personal":
                try:
                    data["destination"] = uuid.UUID(place)
                except ValueError:
                    self.add_error("destination", forms.ValidationError(
                        "That is not a notebook.", code="invalid_id"))
        if action in ("tag", "untag") and not data.get("tag", "").strip():
            self.add_error("tag", forms.ValidationError(
                "Type the tag to add or remove.", code="tag_required"))
        return data

    def problem(self) -> Invalid:
        for errors in self.errors.as_data().values():
            for error in errors:
                return Invalid(" ".join(error.messages), code=error.code or "invalid_request")
        return Invalid("That request is not valid.", code="invalid_request")


class BulkUndoForm(forms.Form):
    """The Undo a batch's flash message offers: the batch's operation id, a fresh one."""

    operation_id = forms.UUIDField()
    batch = forms.UUIDField()
    next = forms.CharField(required=False, max_length=4000)
