"""`{% undo_button message %}`: the Undo form of a flash message that offers one
(`notebooks.views.undo`), or nothing."""

from typing import Any

from django import template

from notebooks.views.undo import Undo

register = template.Library()


@register.inclusion_tag("notebooks/_undo.html", takes_context=True)
def undo_button(context: dict[str, Any], message: Any) -> dict[str, Any]:
    undo = Undo.of(getattr(message, "extra_tags", "") or "")
    request = context.get("request")
    here = request.get_full_path() if request is not None else ""
    return {"undo": undo.form(here=here) if undo else None,
            "csrf_token": context.get("csrf_token")}
