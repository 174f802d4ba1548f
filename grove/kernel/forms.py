"""Form fields the website's pages share (identity's grant pickers, notebooks' and Ask's
forms) — on the kernel's floor, like the In/Out bases of `grove.kernel.schemas`, so the
forms of every floor and app can use them.

A post goes straight to its service, which checks the ids it names (grant, existence,
state); the page reads its choices only to render them. These choice fields therefore
take any well-formed id on a post, and the choices only label what is shown.
"""

from __future__ import annotations

import uuid
from typing import Any

from django import forms


class _TakesAnyId:
    """`valid_value` for choice fields whose values are ids the service will check."""

    def valid_value(self, value: Any) -> bool:
        try:
            uuid.UUID(str(value))
        except ValueError:
            return False
        return True


class IdChoiceField(_TakesAnyId, forms.ChoiceField):
    """One id, or the empty choice (Personal, the top level)."""

    def valid_value(self, value: Any) -> bool:
        return value in ("", None) or super().valid_value(value)


class IdsChoiceField(_TakesAnyId, forms.MultipleChoiceField):
    """Several ids."""
