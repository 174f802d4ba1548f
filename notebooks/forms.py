import uuid
from collections.abc import Sequence
from typing import Any, Self, cast

from django import forms

from grove.interfaces.forms import IdChoiceField
from grove.kernel.errors import Invalid
from grove.kernel.paging import CURSOR_MAX_CHARS
from grove.kernel.validation import TIME_ZONE_MAX_CHARS, clean_time_zone
from notebooks import rules
from notebooks.models import NAME_MAX_CHARS, SOURCE_AGENT_MAX_CHARS, VISION_MAX_CHARS, Kind
from notebooks.rules import CONTENT_OUTER_MAX_CHARS, SEARCH_QUERY_MAX_CHARS


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


class NoteForm(_PicksANotebook):
    # The operation id travels with the form, so a double submit saves once.
    operation_id = forms.UUIDField(widget=forms.HiddenInput, initial=uuid.uuid4)
    content = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}),
                              max_length=CONTENT_OUTER_MAX_CHARS)
    kind = forms.ChoiceField(choices=Kind.choices, initial=Kind.FACT)
    notebook = forms.ChoiceField(required=False)
    task_id = forms.CharField(required=False, label="Task id (handoffs)")
    PLACE, EMPTY = "notebook", "Personal"


class NotebookForm(_PicksANotebook):
    operation_id = forms.UUIDField(widget=forms.HiddenInput, initial=uuid.uuid4)
    name = forms.CharField(max_length=NAME_MAX_CHARS)
    parent = forms.ChoiceField(required=False)
    PLACE, EMPTY = "parent", "(top level)"


class NoteEditForm(forms.Form):
    """A correction of the note's content and kind, guarded by the version it was made
    from: a stale edit is a conflict that shows the newer text and keeps the draft."""

    operation_id = forms.UUIDField(widget=forms.HiddenInput, initial=uuid.uuid4)
    expected_version = forms.IntegerField(widget=forms.HiddenInput, min_value=1)
    content = forms.CharField(widget=forms.Textarea(attrs={"rows": 10}),
                              max_length=CONTENT_OUTER_MAX_CHARS)
    kind = forms.ChoiceField(choices=Kind.choices)


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
    PLACE, EMPTY = "destination", "Personal"


class FencedActionForm(forms.Form):
    """A one-button action on a note (archive, restore, Recently deleted's restore):
    its operation id, and — from Undo — the version the undone change made."""

    operation_id = forms.UUIDField(required=False)
    expected_version = forms.IntegerField(required=False, min_value=1)


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
