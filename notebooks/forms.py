import uuid
from typing import cast

from django import forms

from notebooks.models import NAME_MAX_CHARS, Kind
from notebooks.rules import CONTENT_OUTER_MAX_CHARS


class NoteForm(forms.Form):
    # The operation id travels with the form, so a double submit saves once.
    operation_id = forms.UUIDField(widget=forms.HiddenInput, initial=uuid.uuid4)
    content = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}),
                              max_length=CONTENT_OUTER_MAX_CHARS)
    kind = forms.ChoiceField(choices=Kind.choices, initial=Kind.FACT)
    notebook = forms.ChoiceField(required=False)
    task_id = forms.CharField(required=False, label="Task id (handoffs)")

    def __init__(self, *args, paths=(), **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["notebook"]).choices = [("", "Personal")] + [
            (str(nb.id), path) for nb, path in paths
        ]


class NotebookForm(forms.Form):
    operation_id = forms.UUIDField(widget=forms.HiddenInput, initial=uuid.uuid4)
    name = forms.CharField(max_length=NAME_MAX_CHARS)
    parent = forms.ChoiceField(required=False)

    def __init__(self, *args, paths=(), **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["parent"]).choices = [("", "(top level)")] + [
            (str(nb.id), path) for nb, path in paths
        ]


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

    q = forms.CharField(required=False, max_length=500)
    notebook = forms.CharField(required=False, max_length=64)
    kind = forms.ChoiceField(required=False, choices=[("", "Any kind"), *Kind.choices])
    agent = forms.CharField(required=False, max_length=100, label="Saved by")
    lifetime = forms.ChoiceField(required=False, choices=[
        ("", "Any lifetime"), ("permanent", "Permanent"), ("ephemeral", "Ephemeral")])
    status = forms.ChoiceField(required=False, choices=[
        ("active", "Active"), ("archived", "Archived"), ("expired", "Expired")])
    sort = forms.ChoiceField(required=False, choices=[
        ("", "Best first"), ("relevance", "Relevance"), ("updated_desc", "Recently updated"),
        ("updated_asc", "Least recently updated"), ("created_desc", "Recently created")])
    cursor = forms.CharField(required=False, max_length=2000)
    shown = forms.IntegerField(required=False, min_value=0, max_value=10_000_000)


class NoteMoveForm(forms.Form):
    operation_id = forms.UUIDField(widget=forms.HiddenInput, initial=uuid.uuid4)
    destination = forms.ChoiceField(required=False, label="Move to")

    def __init__(self, *args, paths=(), **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["destination"]).choices = [("", "Personal")] + [
            (str(nb.id), path) for nb, path in paths]


class DiffForm(forms.Form):
    a = forms.IntegerField(min_value=1, label="From version")
    b = forms.IntegerField(min_value=1, label="To version")


class NotebookEditForm(forms.Form):
    """Rename and/or move a notebook (the parent picker excludes its own subtree)."""

    operation_id = forms.UUIDField(widget=forms.HiddenInput, initial=uuid.uuid4)
    name = forms.CharField(max_length=NAME_MAX_CHARS)
    parent = forms.ChoiceField(required=False, label="Inside")

    def __init__(self, *args, paths=(), **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["parent"]).choices = [("", "(top level)")] + [
            (str(nb.id), path) for nb, path in paths]


class NotebookConfirmForm(forms.Form):
    operation_id = forms.UUIDField(widget=forms.HiddenInput, initial=uuid.uuid4, required=False)
    confirm = forms.BooleanField(required=True, label="Yes, I have read the counts above")


class ImportForm(forms.Form):
    file = forms.FileField(label="Export file (NDJSON)")
