"""Proposals on the conversation page, without JavaScript (SPEC §8, §11): a card per
proposal with its preview, Apply and Undo as plain forms, every kind applied and undone,
the state shown, and a stale proposal explained with "Ask again"."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from grove.kernel.tenancy import tenant
from notebooks import services
from notebooks.models import Note, Notebook
from tests import factories
from tests.ask.proposal_helpers import asked, proposal

pytestmark = pytest.mark.django_db


@dataclass
class Case:
    notes: list
    notebooks: list
    proposal: dict[str, Any]
    applied: Any  # () -> bool, read after apply
    undone: Any  # () -> bool, read after undo (None: no undo)


def case(kind: str, owner) -> Case:
    def note(content: str, **kwargs):
        return factories.note(owner, content, **kwargs)

    def status(n):
        return factories.note_row(owner, n.id).status

    def content(n):
        return factories.note_row(owner, n.id).content

    def parent(nb):
        with tenant(owner):
            return Notebook.objects.get(id=nb.id).parent_id

    if kind == "edit":
        a = note("Gate code 1234.")
        return Case([a], [], proposal("edit", [a.versioned_id], content="Gate code 5678."),
                    lambda: content(a) == "Gate code 5678.",
                    lambda: content(a) == "Gate code 1234.")
    if kind == "create":
        a = note("Seen note.")
        return Case([a], [], proposal("create", content="A brand new fact.", note_kind="fact",
                                      notebook="personal"),
                    lambda: _one(owner, "A brand new fact.", "active"),
                    lambda: _one(owner, "A brand new fact.", "deleted"))
    if kind == "merge":
        a, b = note("Staging DB rebuilt Sundays."), note("Staging database: Sunday rebuild.")
        return Case([a, b], [], proposal("merge", [a.versioned_id, b.versioned_id],
                                         content="Staging DB: rebuilt every Sunday."),
                    lambda: content(a) == "Staging DB: rebuilt every Sunday."
                    and status(b) == "archived",
                    lambda: content(a) == "Staging DB rebuilt Sundays."
                    and status(b) == "active")
    if kind in ("archive", "delete"):
        a = note(f"To {kind}.")
        return Case([a], [], proposal(kind, [a.versioned_id]),
                    lambda: status(a) == ("archived" if kind == "archive" else "deleted"),
                    (lambda: status(a) == "active") if kind == "archive" else None)
    if kind == "restore":
        a = note("Archived once.")
        services.note_archive(actor=owner, operation_id=factories.op(), items=[str(a.id)])
        row = factories.note_row(owner, a.id)
        return Case([row], [], proposal("restore", [row.versioned_id]),
                    lambda: status(a) == "active", lambda: status(a) == "archived")
    if kind == "move_notes":
        box = factories.notebook(owner, "Box")
        a = note("Moves into the box.")
        return Case([a], [box], proposal("organise", [a.versioned_id], action="move_notes",
                                         notebook=f"notebook:{box.id}"),
                    lambda: factories.note_row(owner, a.id).notebook_id == box.id,
                    lambda: factories.note_row(owner, a.id).notebook_id is None)
    if kind == "create_notebook":
        a = note("Seen note.")
        return Case([a], [], proposal("organise", action="create_notebook", name="Projects",
                                      notebook="root"),
                    lambda: _notebook(owner, "Projects") == "live",
                    lambda: _notebook(owner, "Projects") == "deleted")
    assert kind == "move_notebook"
    outer, inner = factories.notebook(owner, "Outer"), factories.notebook(owner, "Inner")
    a = note("In the inner notebook.", notebook_id=inner.id)
    return Case([a], [outer, inner], proposal("organise", action="move_notebook",
                                              subject=f"notebook:{inner.id}",
                                              notebook=f"notebook:{outer.id}"),
                lambda: parent(inner) == outer.id, lambda: parent(inner) is None)


def _one(owner, content: str, status: str) -> bool:
    with tenant(owner):
        return Note.objects.filter(content=content, status=status).count() == 1


def _notebook(owner, name: str) -> str:
    with tenant(owner):
        row = Notebook.objects.get(name=name)
    return "deleted" if row.deleted_at else "live"


KINDS = ["edit", "create", "merge", "archive", "restore", "delete", "move_notes",
         "create_notebook", "move_notebook"]


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_is_applied_and_undone_from_the_page(owner, provider, web, kind):
    setup = case(kind, owner)
    conversation, turn = asked(owner, provider, f"please {kind}", setup.notes,
                               setup.proposal, notebooks=setup.notebooks)
    [shown] = turn.proposals
    url = f"/ask/{conversation.id}/turns/{turn.id}/proposals/{shown.id}"
    page = web.get(f"/ask/{conversation.id}/").content.decode()
    assert f'id="proposal-{shown.id}"' in page and 'data-state="proposed"' in page
    assert f'action="{url}/apply"' in page and f'action="{url}/undo"' not in page
    if setup.undone is None:
        assert "<strong>No undo:</strong>" in page
        assert 'name="confirm" required' in page  # the browser asks before it posts

    response = web.post(f"{url}/apply")
    assert response.status_code == 302
    assert response["Location"] == f"/ask/{conversation.id}/#proposal-{shown.id}"
    assert setup.applied()
    page = web.get(f"/ask/{conversation.id}/").content.decode()
    assert "Applied." in page and 'data-state="applied"' in page
    assert f'action="{url}/apply"' not in page
    if setup.undone is None:
        assert f'action="{url}/undo"' not in page
        return
    assert f'action="{url}/undo"' in page
    assert web.post(f"{url}/undo").status_code == 302
    assert setup.undone()
    page = web.get(f"/ask/{conversation.id}/").content.decode()
    assert "Undone: the earlier versions are back" in page and 'data-state="undone"' in page


def test_a_stale_card_says_so_and_offers_to_ask_again(owner, provider, web):
    note = factories.note(owner, "Backups run at 01:00.")
    conversation, turn = asked(owner, provider, "change it to 02:00", [note],
                               proposal("edit", [note.versioned_id],
                                        content="Backups run at 02:00."))
    [shown] = turn.proposals
    services.note_update(actor=owner, operation_id=factories.op(), note_id=note.id,
                         content="Backups run at 03:00.")
    page = web.get(f"/ask/{conversation.id}/").content.decode()
    assert 'data-state="stale"' in page and "can no longer be applied" in page
    assert "Re-ask with the notes as they are now" in page
    url = f"/ask/{conversation.id}/turns/{turn.id}/proposals/{shown.id}/apply"
    assert f'action="{url}"' not in page
    assert web.post(url).status_code == 302  # a stale form posted anyway
    page = web.get(f"/ask/{conversation.id}/").content.decode()
    assert "nothing was changed" in page.lower()
    assert factories.note_row(owner, note.id).content == "Backups run at 03:00."


def test_the_htmx_apply_answers_with_the_turn_and_its_flash(owner, provider, web):
    note = factories.note(owner, "Lights off at 23:00.")
    conversation, turn = asked(owner, provider, "archive it", [note],
                               proposal("archive", [note.versioned_id]))
    [shown] = turn.proposals
    response = web.post(f"/ask/{conversation.id}/turns/{turn.id}/proposals/{shown.id}/apply",
                        headers={"HX-Request": "true"}, follow=True)
    body = response.content.decode()
    assert response.redirect_chain[-1][0].endswith("?acted=1")
    assert f'<li class="turn card" id="turn-{turn.id}"' in body and "<html" not in body
    assert 'data-state="applied"' in body and 'hx-swap-oob="true"' in body
    assert "Applied." in body


def test_a_refused_apply_or_undo_says_nothing_was_changed_once(owner, provider, web):
    note = factories.note(owner, "Backups run at 01:00.")
    conversation, turn = asked(owner, provider, "change it to 02:00", [note],
                               proposal("edit", [note.versioned_id],
                                        content="Backups run at 02:00."))
    [shown] = turn.proposals
    url = f"/ask/{conversation.id}/turns/{turn.id}/proposals/{shown.id}"
    web.post(f"{url}/undo")  # not applied yet: the service's words do not say it
    page = web.get(f"/ask/{conversation.id}/").content.decode()
    assert "Nothing was changed: This proposal has not been applied." in page
    services.note_update(actor=owner, operation_id=factories.op(), note_id=note.id,
                         content="Backups run at 03:00.")
    web.post(f"{url}/apply")  # stale: the service's words say it already
    flash = web.get(f"/ask/{conversation.id}/").content.decode()
    message = flash[flash.index('class="flash'):]
    message = message[:message.index("</p>")]
    assert "The notes changed since this proposal was previewed" in message
    assert message.lower().count("nothing was changed") == 1, message
