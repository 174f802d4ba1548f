"""The website's reads for what agents read first (SPEC §10, §11), one per page:

* the notebook page with its vision card and its Ground truth card
  (`notebook_vision_page`, `notebooks.selectors.truth_pages`);
* the Settings page's account vision card (`account_vision_extra`, registered in
  `notebooks/apps.py` as a settings extra — the core never imports notebooks);
* "What your agents read": a connection's brief, exactly as it reads it
  (`agent_brief_page`);
* Activity: what changed, and who changed it (`activity_page`).

Each is the one call of its view (docs/architecture.md, "The tree").
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.utils.safestring import SafeString

from grove.identity.schemas import ConnectionOut
from grove.identity.selectors import connection_list
from grove.interfaces.rendering import render_markdown
from grove.kernel.actor import Actor
from grove.kernel.errors import Forbidden, NotFound
from grove.kernel.tenancy import tenant
from notebooks.schemas.briefs import ActivityPage, BriefOut, VisionOut, VisionRevisionOut
from notebooks.selectors.activity import WEBSITE, activity_list
from notebooks.selectors.brief import brief_for_connection, brief_get
from notebooks.selectors.library import NotebookPage, notebook_page_of
from notebooks.selectors.truth_pages import TruthCard, truth_card
from notebooks.selectors.vision import vision_get, vision_revisions

# WEBSITE ("website"): the owner on the website in both pages' connection pickers, as
# `activity_list` names the changes made there.

# The vision card lists this many versions; the selector reads at most VISION_HISTORY_MAX.
VISION_CARD_HISTORY = 10


# -- the vision card ---------------------------------------------------------------------------


@dataclass(frozen=True)
class VisionCard:
    """What `templates/notebooks/_vision.html` shows: the vision (version 0: none yet), its
    text rendered (sanitised markdown), its latest versions, and a fresh operation id for
    the edit form (so a double submit saves once)."""

    vision: VisionOut
    html: SafeString
    revisions: list[VisionRevisionOut]  # newest first, at most VISION_CARD_HISTORY
    more: int  # older versions not listed
    operation_id: uuid.UUID


def vision_card(actor: Actor, notebook_id: uuid.UUID | str | None) -> VisionCard:
    """The account's vision card (`notebook_id` None) or a notebook's. Rendered here,
    once, because the core's Settings view shows it without knowing what a vision is."""
    with tenant(actor):
        vision = vision_get(actor=actor, notebook_id=notebook_id)
        revisions = vision_revisions(actor=actor, notebook_id=notebook_id)
    return VisionCard(vision=vision, html=render_markdown(vision.content),
                      revisions=revisions[:VISION_CARD_HISTORY],
                      more=max(0, len(revisions) - VISION_CARD_HISTORY),
                      operation_id=uuid.uuid4())


@dataclass(frozen=True)
class NotebookVisionPage:
    page: NotebookPage  # the notebook page's own read (counts, other apps' extras)
    vision: VisionCard
    truth: TruthCard


def notebook_vision_page(*, actor: Actor, notebook_id: uuid.UUID | str) -> NotebookVisionPage:
    """The notebook page's read, in one transaction: the notebook, its subtree counts and
    other apps' extras (`notebook_page_of`), and its vision with its history. Missing and
    foreign notebooks are the same NotFound."""
    with tenant(actor):
        page = notebook_page_of(actor=actor, notebook_id=notebook_id)
        return NotebookVisionPage(page=page, vision=vision_card(actor, page.notebook.id),
                                  truth=truth_card(actor, page.notebook))


def account_vision_extra(actor: Actor) -> dict[str, Any]:
    """The Settings page's account vision card (a settings extra: read in the Settings
    page's transaction, `grove.identity.selectors.account_settings_page`)."""
    return {"vision_card": vision_card(actor, None)}


# -- what your agents read ---------------------------------------------------------------------


@dataclass(frozen=True)
class AgentBriefPage:
    """The connections to choose from, the one chosen (None: the owner on the website),
    and its brief — or why it reads nothing here (`refusal`)."""

    connections: list[ConnectionOut]  # every connection of the account, newest first
    chosen: ConnectionOut | None
    brief: BriefOut | None
    refusal: str | None = None


def agent_brief_page(*, actor: Actor, connection_id: uuid.UUID | str | None,
                     arguments: dict[str, Any] | None) -> AgentBriefPage:
    """What the connection `connection_id` (`"website"`: the owner; None: the newest
    active connection, else the owner) reads with these `brief_get` `arguments`:
    `brief_for_connection` runs `brief_get` — what its REST route and MCP tool run — as
    that connection, with its own grant, so the page cannot differ from what it gets.
    No `arguments`: the connections only. A pending or revoked connection, or a notebook
    or Personal outside its grant, is a `refusal`, not an error; an unknown connection
    is NotFound. Owner session only.

    Two reads, not one transaction: the brief's recall (for `focus`) embeds the query,
    which must not happen inside a transaction."""
    actor.require_session()
    connections = connection_list(actor=actor)
    chosen = None
    if connection_id is None:
        chosen = next((c for c in connections if c.status == "active"), None)
    elif connection_id != WEBSITE:
        chosen = next((c for c in connections if str(c.id) == str(connection_id)), None)
        if chosen is None:
            raise NotFound("No such connection.", code="not_found")
    if arguments is None:
        return AgentBriefPage(connections=connections, chosen=chosen, brief=None)
    try:
        if chosen is None:
            brief = brief_get(actor=actor, **arguments)
        else:
            brief = brief_for_connection(actor=actor, connection_id=chosen.id, **arguments)
    except Forbidden as refused:  # inactive, or Personal not granted
        return AgentBriefPage(connections=connections, chosen=chosen, brief=None,
                              refusal=refused.message)
    except NotFound as missing:
        if missing.code != "notebook_not_found":
            raise
        who = chosen.name if chosen is not None else "You"
        return AgentBriefPage(connections=connections, chosen=chosen, brief=None,
                              refusal=f"{who} cannot read that notebook: it is not in its "
                                      "grant (or no longer exists).")
    return AgentBriefPage(connections=connections, chosen=chosen, brief=brief)


# -- activity ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class AgentActivityPage:
    connections: list[ConnectionOut]  # for the "who" filter, revoked ones included
    activity: ActivityPage


def activity_page(*, actor: Actor, **arguments: Any) -> AgentActivityPage:
    """The Activity page's read, in one transaction: every connection (to filter by) and
    one page of `activity_list` with these arguments. Owner session only."""
    actor.require_session()
    with tenant(actor):
        return AgentActivityPage(connections=connection_list(actor=actor),
                                 activity=activity_list(actor=actor, **arguments))
