"""The sidebar's note counts: live notes only (what each notebook's list shows), read in
one grouped query for every notebook, as far as the caller is granted."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from notebooks import selectors, services
from notebooks.models import Note
from tests import factories
from tests.factories import op, tenant

pytestmark = pytest.mark.django_db


def test_counts_are_the_live_notes_of_each_notebook(owner):
    work = factories.notebook(owner, "Work")
    plans = factories.notebook(owner, "Plans", parent=work.id)
    empty = factories.notebook(owner, "Empty")
    kept = [factories.note(owner, f"live {n}", notebook_id=work.id) for n in range(3)]
    factories.note(owner, "in plans", notebook_id=plans.id)
    factories.note(owner, "personal")
    archived = factories.note(owner, "archived", notebook_id=work.id)
    services.note_archive(actor=owner, operation_id=op(), items=[archived.id])
    gone = factories.note(owner, "deleted", notebook_id=work.id)
    services.note_forget(actor=owner, operation_id=op(), items=[gone.id])
    late = factories.note(owner, "past its expiry", notebook_id=work.id, retention_days=1)
    with tenant(owner):  # the expire job has not run yet: still not live
        Note.objects.filter(id=late.id).update(expires_at=timezone.now() - timedelta(hours=1))
    counts = selectors.notebook_note_counts(actor=owner)
    assert counts == {work.id: len(kept), plans.id: 1}
    assert empty.id not in counts
    shelf = selectors.notebook_shelf(actor=owner)
    notebooks, same = shelf.notebooks, shelf.note_counts
    assert same == counts and {nb.name for nb in notebooks} == {"Work", "Plans", "Empty"}


def test_a_connection_counts_only_its_granted_notebooks(owner):
    work = factories.notebook(owner, "Work")
    secret = factories.notebook(owner, "Secret", parent=work.id)
    factories.note(owner, "work", notebook_id=work.id)
    factories.note(owner, "secret", notebook_id=secret.id)
    agent = factories.connection(owner, notebooks=[work.id])
    assert selectors.notebook_note_counts(actor=agent) == {work.id: 1}


def test_the_sidebar_shows_the_counts_nested(owner, web):
    work = factories.notebook(owner, "Work")
    plans = factories.notebook(owner, "Plans", parent=work.id)
    for n in range(2):
        factories.note(owner, f"note {n}", notebook_id=plans.id)
    html = web.get("/").content.decode()
    shown = dict(re.findall(r'<span class="name">([^<]+)</span> <span class="count">(\d+)',
                            html))
    assert shown == {"Work": "0", "Plans": "2"}
    assert f'<details class="branch" data-notebook="{work.id}" open>' in html
    assert f'<details class="branch" data-notebook="{plans.id}"' not in html  # a leaf
    # An HTMX partial of the list reads no counts (and shows no sidebar).
    partial = web.get("/", {"q": "note"}, HTTP_HX_REQUEST="true").content.decode()
    assert 'class="count">' not in partial and 'id="results"' in partial
