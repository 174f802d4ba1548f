"""`{% share_box note_id=… %}` / `{% share_box notebook_id=… %}`: the Share card on a note
or notebook page — the live link (copy, views, revoke) or a button to create one."""

from typing import Any

from django import template

from grove.interfaces.middleware import session_actor
from sharing import selectors

register = template.Library()


@register.inclusion_tag("sharing/_box.html", takes_context=True)
def share_box(context: dict[str, Any], note_id: Any = None,
              notebook_id: Any = None) -> dict[str, Any]:
    request = context["request"]
    share = selectors.share_for(actor=session_actor(request), note_id=note_id,
                               notebook_id=notebook_id)
    return {"share": share, "note_id": note_id, "notebook_id": notebook_id,
            "next": request.get_full_path(), "csrf_token": context.get("csrf_token")}
