import uuid
from typing import cast

from django import forms

from notebooks.models import CONTENT_MAX_CHARS, NAME_MAX_CHARS, Kind


class NoteForm(forms.Form):
    # The operation id travels with the form, so a double submit saves once.
    operation_id = forms.UUIDField(widget=forms.HiddenInput, initial=uuid.uuid4)
    content = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}),
                              max_length=CONTENT_MAX_CHARS + 1000)
    kind = forms.ChoiceField(choices=Kind.choices, initial=Kind.FACT)
    notebook = forms.ChoiceField(required=False)
    task_id = forms.CharField(required=False, label="Task id (handoffs)")

    def __init__(self, *args, notebooks=(), **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["notebook"]).choices = [("", "Personal")] + [
            (str(nb.id), nb.name) for nb in notebooks
        ]


class NotebookForm(forms.Form):
    operation_id = forms.UUIDField(widget=forms.HiddenInput, initial=uuid.uuid4)
    name = forms.CharField(max_length=NAME_MAX_CHARS)
    parent = forms.ChoiceField(required=False)

    def __init__(self, *args, notebooks=(), **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["parent"]).choices = [("", "(top level)")] + [
            (str(nb.id), nb.name) for nb in notebooks
        ]


class NoteEditForm(forms.Form):
    """A correction of the note's content and kind, guarded by the version it was made
    from: a stale edit is a conflict that shows the newer text and keeps the draft."""

    operation_id = forms.UUIDField(widget=forms.HiddenInput, initial=uuid.uuid4)
    expected_version = forms.IntegerField(widget=forms.HiddenInput, min_value=1)
    content = forms.CharField(widget=forms.Textarea(attrs={"rows": 10}),
                              max_length=CONTENT_MAX_CHARS + 1000)
    kind = forms.ChoiceField(choices=Kind.choices)


class ConfirmForm(forms.Form):
    operation_id = forms.UUIDField(widget=forms.HiddenInput, initial=uuid.uuid4, required=False)
    confirm = forms.BooleanField(required=True, label="Yes, delete this note")
