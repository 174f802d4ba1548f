"""`{% share_box share note_id=… %}` / `{% share_box share notebook_id=… %}`: the Share card
on a note or notebook page — the live link (copy, views, revoke) or a button to create
one. With `panel=True` it is one of the note page's panels (shown on demand, `#share`).
It renders only what it is given: the page's view reads the share
(`sharing.selectors.page_share`, added to the page's read), so rendering makes no
query."""

from typing import Any

from django import template

from sharing.schemas import ShareOut

register = template.Library()


@register.inclusion_tag("sharing/_box.html", takes_context=True)
def share_box(context: dict[str, Any], share: ShareOut | None, note_id: Any = None,
              notebook_id: Any = None, panel: bool = False) -> dict[str, Any]:
    return {"share": share, "note_id": note_id, "notebook_id": notebook_id, "panel": panel,
            "next": context["request"].get_full_path(), "csrf_token": context.get("csrf_token")}
