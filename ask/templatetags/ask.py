"""`{% tidy_box notebook %}`: the "Tidy this notebook" card on a notebook's page — a form
that starts an Ask conversation whose one turn is a tidy-up of that notebook (likely
duplicates and contradictions become merge and edit proposals). It carries fresh ids
(a double submit asks once) and makes no query."""

from typing import Any

from django import template

from ask.forms import TidyForm

register = template.Library()


@register.inclusion_tag("ask/_tidy.html", takes_context=True)
def tidy_box(context: dict[str, Any], notebook: Any) -> dict[str, Any]:
    return {"notebook": notebook, "form": TidyForm(), "csrf_token": context.get("csrf_token")}
