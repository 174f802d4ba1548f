"""Forms of the owner's pages: setup, keys, approval and grants."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from django import forms
from django.forms.utils import flatatt
from django.http import QueryDict
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from grove.identity.schemas import ConnectionOut
from grove.kernel.actor import WRITE
from grove.kernel.forms import IdsChoiceField
from grove.kernel.validation import TIME_ZONE_MAX_CHARS


class NotebookTree(forms.CheckboxSelectMultiple):
    """The notebooks to tick, as their tree: nested lists of bare names. Beside each
    parent a button ticks it with every notebook inside (grove.js shows it: without
    JavaScript it stays hidden, and the field's help says what a grant covers).
    `parents`: each choice's parent id (None at the top)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.parents: dict[str, str | None] = {}

    def render(self, name: str, value: Any, attrs: dict[str, Any] | None = None,
               renderer: Any = None) -> SafeString:
        widget = self.get_context(name, value, attrs)["widget"]
        options = [option for _group, group, _index in widget["optgroups"] for option in group]
        listed = {str(option["value"]) for option in options}
        children: dict[str | None, list[dict[str, Any]]] = {}
        for option in options:
            parent = self.parents.get(str(option["value"]))
            children.setdefault(parent if parent in listed else None, []).append(option)

        def branch(parent: str | None) -> SafeString:
            items = []
            for option in children.get(parent, []):
                inside = str(option["value"]) in children
                items.append(format_html(
                    '<li><label><input type="checkbox" name="{}" value="{}"{}> {}</label>{}{}'
                    "</li>", option["name"], option["value"], flatatt(option["attrs"]),
                    option["label"],
                    format_html(' <button type="button" class="link" data-tick-children '
                                'aria-label="Also tick the notebooks inside {}" hidden>also '
                                "tick its sub-notebooks</button>", option["label"])
                    if inside else "",
                    branch(str(option["value"])) if inside else ""))
            return format_html("<ul>{}</ul>", mark_safe("".join(items)))  # noqa: S308 - built by format_html

        return format_html('<div id="{}" class="notebook-tree" data-notebook-tree>{}</div>',
                           widget["attrs"].get("id", ""), branch(None))


class OwnerSetupForm(forms.Form):
    username = forms.CharField(max_length=150)
    email = forms.EmailField(required=False)
    password = forms.CharField(widget=forms.PasswordInput, min_length=8)
    password_again = forms.CharField(widget=forms.PasswordInput)

    def clean(self) -> dict:
        data = super().clean() or {}
        if data.get("password") != data.get("password_again"):
            self.add_error("password_again", "The two passwords differ.")
        return data


class DeleteAccountForm(forms.Form):
    password = forms.CharField(
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
        label="Your password", strip=False)


class PasswordForm(forms.Form):
    current = forms.CharField(widget=forms.PasswordInput, label="Current password",
                              strip=False)
    new = forms.CharField(widget=forms.PasswordInput, label="New password", strip=False)
    new_again = forms.CharField(widget=forms.PasswordInput, label="New password again",
                                strip=False)

    def clean(self) -> dict:
        data = super().clean() or {}
        if data.get("new") != data.get("new_again"):
            self.add_error("new_again", "The two passwords differ.")
        return data


class TimeZoneForm(forms.Form):
    """The Settings page's time zone: an IANA name (the service checks it against the
    zone database; the datalist `time-zones` suggests every name it knows)."""

    time_zone = forms.CharField(
        max_length=TIME_ZONE_MAX_CHARS, label="Time zone",
        widget=forms.TextInput(attrs={"list": "time-zones", "autocomplete": "off",
                                      "spellcheck": "false", "placeholder": "UTC"}))


SECRET_ACTIONS = [("redact", "Redact: replace it with a marker and save"),
                  ("refuse", "Refuse: save nothing")]


class SecretRulesForm(forms.Form):
    """Settings → Credentials: what saves do with credentials, by where the text comes
    from, and the owner's patterns, one `name: pattern` per line (the service checks
    each with RE2)."""

    on_ingest = forms.ChoiceField(choices=SECRET_ACTIONS, label="Ingested files")
    on_automatic = forms.ChoiceField(choices=SECRET_ACTIONS,
                                     label="Agents saving on their own")
    on_explicit = forms.ChoiceField(choices=SECRET_ACTIONS,
                                    label="Saves you or an agent make on request")
    patterns = forms.CharField(
        required=False, label="Your own patterns", max_length=30_000,
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false",
                                     "placeholder": "badge: ACME-[0-9]{6}"}))

    def clean_patterns(self) -> list[dict[str, str]]:
        items = []
        for number, line in enumerate(self.cleaned_data["patterns"].splitlines(), 1):
            if not line.strip():
                continue
            name, colon, pattern = line.partition(":")
            if not colon or not pattern.strip():
                raise forms.ValidationError(
                    f"Line {number}: write a name, a colon, then the pattern.")
            items.append({"name": name.strip(), "pattern": pattern.strip()})
        return items

    @staticmethod
    def shown(patterns: list[Any] | None) -> str:
        return "\n".join(f"{item.name}: {item.pattern}" for item in patterns or [])


class KeyForm(forms.Form):
    name = forms.CharField(max_length=200, help_text="What the key is for, e.g. “laptop”.")
    can_write = forms.BooleanField(required=False, initial=True, label="May save and change notes",
                                   help_text="Without it the key can only read (memory:read).")
    personal = forms.BooleanField(required=False, label="Personal notes")
    scope = forms.ChoiceField(choices=[("all", "Every notebook, current and future"),
                                       ("some", "Only the notebooks ticked below")],
                              initial="some", widget=forms.RadioSelect)
    notebooks = forms.MultipleChoiceField(
        required=False, widget=NotebookTree,
        help_text="Granting a notebook does not grant the notebooks inside it: tick each one.")

    def __init__(self, *args: object,
                 notebooks: Sequence[tuple[str, str, str | None]] | None, **kwargs: object):
        """`notebooks`: the choices to offer, as their tree (`selectors.notebook_choices`:
        id, name, parent id); None for a post the service will check."""
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        if notebooks is None:
            # Taken as ids: the service checks what may be granted (notebook_not_found).
            self.fields["notebooks"] = IdsChoiceField(
                required=False, widget=forms.CheckboxSelectMultiple)
            return
        field = self.fields["notebooks"]
        assert isinstance(field, forms.MultipleChoiceField)
        assert isinstance(field.widget, NotebookTree)
        field.choices = [(id_, name) for id_, name, _parent in notebooks]
        field.widget.parents = {id_: parent for id_, _name, parent in notebooks}


class NewKeyForm(KeyForm):
    """The Connections page's form: one key per form shown — a reload that posts it
    again creates no second key."""

    operation_id = forms.UUIDField(widget=forms.HiddenInput, initial=uuid.uuid4, required=False)


class ApproveForm(KeyForm):
    """What an OAuth client may do: the key form without a name (the client has one),
    starting from least privilege — read only, no notebook ticked."""

    request = forms.UUIDField(widget=forms.HiddenInput)

    def __init__(self, *args: object, **kwargs: Any):
        super().__init__(*args, **kwargs)
        del self.fields["name"]
        self.fields["can_write"].initial = False
        self.fields["can_write"].help_text = "Without it the app can only read."


class GrantForm(KeyForm):
    """Change a connection's name, capabilities and grant, if nobody else did since the
    page was loaded (`expected_state`)."""

    expected_state = forms.CharField(widget=forms.HiddenInput, max_length=64)
    home = forms.ChoiceField(
        required=False, label="Home notebook",
        help_text="Its saves go here, and what it reads covers this notebook with Personal, "
                  "unless it names another. It must be one it may use.")

    NO_HOME = ("", "None: saves go to Personal, reads cover everything it may use")

    def __init__(self, *args: object, **kwargs: Any):
        super().__init__(*args, **kwargs)
        offered = kwargs.get("notebooks")
        if offered is None:  # a post: the service checks the id
            self.fields["home"] = forms.CharField(required=False, max_length=64)
        else:
            field = self.fields["home"]
            assert isinstance(field, forms.ChoiceField)
            field.choices = [self.NO_HOME, *((id_, name) for id_, name, _ in offered)]

    @classmethod
    def of(cls, connection: ConnectionOut,
           notebooks: Sequence[tuple[str, str, str | None]], *,
           bound: bool = False) -> GrantForm:
        """The form filled with what the connection may do now (`bound`: as if posted,
        so errors can be shown on it)."""
        values: dict[str, Any] = {
            "name": connection.name, "personal": connection.grant.personal,
            "scope": "all" if connection.grant.all_notebooks else "some",
            "notebooks": [str(n) for n in connection.grant.notebooks],
            "home": str(connection.home_notebook_id or ""),
            "expected_state": connection.state}
        if WRITE in connection.capabilities:
            values["can_write"] = True
        if not bound:
            return cls(notebooks=notebooks, initial=values)
        data = QueryDict(mutable=True)
        for key, value in values.items():
            if isinstance(value, list):
                data.setlist(key, value)
            elif value is not False:
                data[key] = "on" if value is True else value
        form = cls(data, notebooks=notebooks)
        form.is_valid()
        return form
