"""Who am I (SPEC §10): what a connection is and may do, so an agent learns it without
failing first — and the brief's startup line, which says the same in one sentence."""

from __future__ import annotations

from grove.kernel.actor import READ, Actor
from grove.kernel.tenancy import tenant
from grove.models import Account, Connection
from notebooks.rules import notebook_paths
from notebooks.schemas.brief_markdown import one_line
from notebooks.schemas.briefs import GrantedNotebook, WhoamiOut
from notebooks.selectors.access import live_notebooks

STARTUP_NOTEBOOKS_NAMED = 10


def _may(actor: Actor) -> str:
    can = sorted(c.split(":")[1] for c in actor.capabilities)
    return {("read", "write"): "read and write", ("read",): "read only",
            ("write",): "write only"}.get(tuple(can), "nothing")


def whoami_in(actor: Actor) -> WhoamiOut:
    """`whoami` inside the caller's tenant transaction."""
    account = Account.objects.only("username", "capture_paused_at").get(id=actor.account_id)
    connection = (Connection.objects.filter(id=actor.connection_id).first()
                  if actor.connection_id else None)
    paths = notebook_paths(live_notebooks(actor).order_by("name", "id"))
    granted = sorted(((path, nb_id) for nb_id, path in paths.items()),
                     key=lambda item: item[0].lower())
    # Names are one line here: the startup line opens every brief (see one_line).
    name = one_line(connection.name) if connection else "the owner (website)"
    named = [one_line(path) for path, _ in granted[:STARTUP_NOTEBOOKS_NAMED]]
    where = "every notebook" if actor.grant.all_notebooks else ", ".join(named) or "no notebooks"
    if not actor.grant.all_notebooks and len(granted) > STARTUP_NOTEBOOKS_NAMED:
        where += f" and {len(granted) - STARTUP_NOTEBOOKS_NAMED} more"
    paused = account.capture_paused_at is not None
    home_path = paths.get(actor.home) if actor.home is not None else None
    home = None if home_path is None else GrantedNotebook(id=f"notebook:{actor.home}",
                                                          name=home_path)
    startup = (f"You are {name} in {account.username}'s Grove: {_may(actor)}; "
               f"{where}; Personal notes: {'yes' if actor.grant.personal else 'no'}. "
               + (f"Home notebook: {one_line(home_path)} — saves go there and reads cover "
                  "it with Personal unless you name a notebook. " if home_path else "")
               + ("Automatic capture is paused: save only when asked (capture explicit)."
                  if paused else "Automatic capture is on."))
    return WhoamiOut(
        account=account.username, via="connection" if connection else "session",
        connection_id=connection.id if connection else None,
        connection_name=connection.name if connection else None,
        connection_kind=connection.kind if connection else None,
        capabilities=sorted(actor.capabilities), personal=actor.grant.personal,
        all_notebooks=actor.grant.all_notebooks,
        notebooks=[GrantedNotebook(id=f"notebook:{nb_id}", name=path)
                   for path, nb_id in granted],
        capture_paused=paused, home=home, startup=startup)


def whoami(*, actor: Actor) -> WhoamiOut:
    """What this caller is and may do: its name, capabilities, Personal yes/no, the live
    notebooks it is granted, whether automatic capture is paused."""
    actor.require(READ)
    with tenant(actor):
        actor.require(READ)
        return whoami_in(actor)


