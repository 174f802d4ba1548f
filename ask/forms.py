"""The Ask page's forms. Ids travel with the form (a fresh UUID per render), so a double
submit creates one conversation and one turn — the services' idempotency does the rest."""

import uuid
from typing import Any, cast

from django import forms

from ask.rules import CONTEXT_NOTEBOOKS_MAX, CONTEXT_NOTES_MAX, QUERY_MAX_CHARS, SEARCH_MAX_CHARS
from grove.kernel.forms import IdsChoiceField
from grove.kernel.paging import CURSOR_MAX_CHARS


class AskForm(forms.Form):
    conversation_id = forms.UUIDField(widget=forms.HiddenInput, initial=uuid.uuid4)
    turn_id = forms.UUIDField(widget=forms.HiddenInput, initial=uuid.uuid4)
    expected_version = forms.IntegerField(widget=forms.HiddenInput, initial=0, min_value=0)
    query = forms.CharField(label="Question", max_length=QUERY_MAX_CHARS,
                            widget=forms.Textarea(attrs={
                                "rows": 3, "placeholder": "Ask anything about your notes…"}))
    scope = forms.ChoiceField(label="Search in", required=False)
    format = forms.ChoiceField(choices=[("markdown", "Formatted"), ("plain", "Plain text")],
                               initial="markdown", label="Answer as")
    notebooks = forms.MultipleChoiceField(required=False, label="Notebooks",
                                          widget=forms.CheckboxSelectMultiple)
    # Any note ids: whether each is reachable is the service's call (409
    # context_unavailable); the choices only label the ones shown.
    notes = IdsChoiceField(required=False, label="Notes", widget=forms.CheckboxSelectMultiple)
    only = forms.BooleanField(required=False, label="Only these sources")

    def __init__(self, *args: Any, paths: Any = (), notes: Any = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["scope"]).choices = [
            ("", "All notebooks and Personal"), ("personal", "Personal only")] + [
            (str(nb.id), path) for nb, path in paths]
        cast(forms.ChoiceField, self.fields["notebooks"]).choices = [
            (str(nb.id), path) for nb, path in paths]
        self.picked_notes = list(notes)
        cast(forms.ChoiceField, self.fields["notes"]).choices = [
            (str(n.id), label) for n, label in self.picked_notes]

    def clean_notes(self) -> list[str]:
        notes = self.cleaned_data["notes"]
        if len(notes) > CONTEXT_NOTES_MAX:
            raise forms.ValidationError(
                f"Pick at most {CONTEXT_NOTES_MAX} notes.")
        return notes

    def clean_notebooks(self) -> list[str]:
        notebooks = self.cleaned_data["notebooks"]
        if len(notebooks) > CONTEXT_NOTEBOOKS_MAX:
            raise forms.ValidationError(
                f"Pick at most {CONTEXT_NOTEBOOKS_MAX} notebooks.")
        return notebooks

    def context(self) -> dict[str, Any] | None:
        """The source selection, or None when nothing was picked."""
        data = self.cleaned_data
        if not data["notes"] and not data["notebooks"]:
            return None
        return {"notes": data["notes"], "notebooks": data["notebooks"],
                "only": data["only"]}


class HistoryForm(forms.Form):
    q = forms.CharField(required=False, max_length=SEARCH_MAX_CHARS,
                        label="Search conversations")
    cursor = forms.CharField(required=False, max_length=CURSOR_MAX_CHARS)


class TidyForm(forms.Form):
    """Start a tidy-up of a notebook: only the ids travel (the question is Grove's)."""

    conversation_id = forms.UUIDField(widget=forms.HiddenInput, initial=uuid.uuid4)
    turn_id = forms.UUIDField(widget=forms.HiddenInput, initial=uuid.uuid4)
