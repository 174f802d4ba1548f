"""The one keyset step and the one signed cursor format (SPEC §4): a cursor opens only
for its binding (account + connection, or a share), its filters and its list; paging
walks every row once in either direction, ties on the timestamp included, stays put
while rows are added (the ceiling), and the last page hands out no cursor."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from grove.kernel.errors import Invalid
from grove.kernel.paging import (
    Cursor,
    caller_binding,
    cursor_after,
    cursor_read,
    cursor_write,
    keyset_page,
)
from notebooks.models import Notebook
from sharing import selectors as public
from sharing import services as sharing
from tests import factories

pytestmark = pytest.mark.django_db

SALT = "tests.paging"


@pytest.fixture
def owner():
    return factories.owner()


def notebooks_with_ties(owner, count: int = 9) -> list[Notebook]:
    """`count` notebooks whose creation times come in groups of three equal instants,
    so only the id orders rows inside a group."""
    made = [factories.notebook(owner, f"Book {i}") for i in range(count)]
    base = timezone.now() - timedelta(hours=1)
    with factories.tenant(owner):
        for i, notebook in enumerate(made):
            Notebook.objects.filter(id=notebook.id).update(
                created_at=base + timedelta(minutes=i // 3))
        return list(Notebook.objects.filter(id__in=[n.id for n in made]))


def walk(actor, order, *, limit, fingerprint="all", between_pages=None):
    """Every page of the caller's notebooks through the kernel alone, as a list would
    page them: a ceiling fixed by the first page, a cursor between pages."""
    seen, cursor, pages = [], None, 0
    while True:
        opened = cursor_read(cursor, salt=SALT, binding=caller_binding(actor),
                             fingerprint=fingerprint)
        with factories.tenant(actor):
            ceiling = opened.ceiling or timezone.now()
            rows = Notebook.objects.filter(created_at__lte=ceiling)
            page = keyset_page(rows, order=order, after=opened.key, limit=limit)
        seen += [n.id for n in page.rows]
        pages += 1
        assert pages <= 100, "paging does not advance"
        cursor = cursor_after(opened, page, ceiling=ceiling, salt=SALT)
        if cursor is None:
            return seen, pages
        if between_pages:
            between_pages()


@pytest.mark.parametrize("order", [("created_at", "id"), ("-created_at", "-id"),
                                   ("-created_at", "id"), ("created_at", "-id")])
def test_both_directions_with_ties_on_the_timestamp(owner, order):
    made = notebooks_with_ties(owner)
    expected = list(made)
    # Python's UUID order is PostgreSQL's (both compare the 16 bytes big-endian).
    for name in reversed(order):  # stable sorts, least significant field first
        field = name.removeprefix("-")
        expected.sort(key=lambda n: getattr(n, field),  # noqa: B023 - used at once
                      reverse=name.startswith("-"))
    for limit in (1, 2, 3, 4):
        seen, pages = walk(owner, order, limit=limit)
        assert seen == [n.id for n in expected], (order, limit)
        assert pages == -(-len(made) // limit)


def test_the_last_page_has_no_cursor(owner):
    notebooks_with_ties(owner, count=6)
    with factories.tenant(owner):
        rows = Notebook.objects.all()
        exact = keyset_page(rows, order=("created_at", "id"), after=None, limit=6)
        assert len(exact.rows) == 6 and exact.next_key is None  # exactly full: no more
        first = keyset_page(rows, order=("created_at", "id"), after=None, limit=4)
        assert first.next_key == (first.rows[-1].created_at, first.rows[-1].id)
        rest = keyset_page(rows, order=("created_at", "id"), after=first.next_key, limit=4)
        assert len(rest.rows) == 2 and rest.next_key is None
        nothing = keyset_page(rows.none(), order=("created_at", "id"), after=None, limit=4)
        assert nothing.rows == [] and nothing.next_key is None
    opened = cursor_read(None, salt=SALT, binding=caller_binding(owner), fingerprint="all")
    assert cursor_after(opened, rest, ceiling=timezone.now(), salt=SALT) is None


def test_stable_while_rows_are_added(owner):
    older = notebooks_with_ties(owner, count=7)
    added = []

    def insert():
        added.append(factories.notebook(owner, f"Added {len(added)}").id)

    seen, pages = walk(owner, ("-created_at", "-id"), limit=2, between_pages=insert)
    assert pages == 4
    assert len(seen) == len(set(seen)) == 7  # no duplicates, no skips
    assert set(seen) == {n.id for n in older} and not set(seen) & set(added)
    seen_again, _ = walk(owner, ("created_at", "id"), limit=50)
    assert set(added) <= set(seen_again)  # a new walk has a new ceiling


def test_a_cursor_opens_only_for_its_account_and_connection(owner):
    notebooks_with_ties(owner, count=3)
    opened = cursor_read(None, salt=SALT, binding=caller_binding(owner), fingerprint="all")
    with factories.tenant(owner):
        page = keyset_page(Notebook.objects.all(), order=("created_at", "id"), after=None,
                           limit=1)
    cursor = cursor_after(opened, page, ceiling=timezone.now(), salt=SALT)
    assert cursor
    kept = cursor_read(cursor, salt=SALT, binding=caller_binding(owner), fingerprint="all")
    assert kept.key == page.next_key and kept.binding == caller_binding(owner)
    for other in (factories.owner(), factories.connection(owner, all_notebooks=True),
                  factories.connection(factories.owner(), all_notebooks=True)):
        with pytest.raises(Invalid) as refused:
            cursor_read(cursor, salt=SALT, binding=caller_binding(other), fingerprint="all")
        assert refused.value.code == "invalid_cursor" and refused.value.status == 400
    key = factories.connection(owner, all_notebooks=True)
    of_key = cursor_write(Cursor(binding=caller_binding(key), fingerprint="all",
                                 ceiling=timezone.now(), key=page.next_key), salt=SALT)
    assert cursor_read(of_key, salt=SALT, binding=caller_binding(key), fingerprint="all")
    for other in (owner, factories.connection(owner, all_notebooks=True)):
        with pytest.raises(Invalid) as refused:
            cursor_read(of_key, salt=SALT, binding=caller_binding(other), fingerprint="all")
        assert refused.value.code == "invalid_cursor"


def test_tampered_truncated_foreign_list_and_junk_are_refused(owner):
    binding = caller_binding(owner)
    cursor = cursor_write(Cursor(binding=binding, fingerprint="all", ceiling=timezone.now(),
                                 key=(timezone.now(), uuid.uuid4())), salt=SALT)
    tampered = cursor[:-3] + ("AAA" if not cursor.endswith("AAA") else "BBB")
    for bad in (tampered, cursor[:-1], cursor + "x", cursor.replace(":", ";"), "garbage",
                "", "e30", "a" * 5000):
        with pytest.raises(Invalid) as refused:
            cursor_read(bad, salt=SALT, binding=binding, fingerprint="all")
        assert refused.value.code == "invalid_cursor", bad
    with pytest.raises(Invalid) as other_list:  # each list has its salt
        cursor_read(cursor, salt="tests.paging.other", binding=binding, fingerprint="all")
    assert other_list.value.code == "invalid_cursor"


def test_a_cursor_for_other_filters_is_a_mismatch(owner):
    binding = caller_binding(owner)
    cursor = cursor_write(Cursor(binding=binding, fingerprint="kind=fact",
                                 ceiling=timezone.now(), key=(1.5, str(uuid.uuid4()))),
                          salt=SALT)
    with pytest.raises(Invalid) as refused:
        cursor_read(cursor, salt=SALT, binding=binding, fingerprint="kind=decision")
    assert refused.value.code == "cursor_mismatch" and refused.value.status == 400


def test_keys_keep_their_types_and_a_key_of_another_shape_is_refused(owner):
    when = timezone.now().replace(microsecond=123456)
    ident = uuid.uuid4()
    key = (when, ident, 0.1 + 0.2, 7, "text")
    cursor = cursor_write(Cursor(binding=caller_binding(owner), fingerprint="f",
                                 ceiling=when, key=key), salt=SALT)
    opened = cursor_read(cursor, salt=SALT, binding=caller_binding(owner), fingerprint="f")
    assert opened.key == key and opened.ceiling == when
    assert [type(v) for v in opened.key] == [type(v) for v in key]
    with factories.tenant(owner), pytest.raises(Invalid) as refused:
        keyset_page(Notebook.objects.all(), order=("created_at", "id"), after=key, limit=2)
    assert refused.value.code == "invalid_cursor"


def test_a_share_cursor_opens_only_that_share(owner):
    """Visitors have no account: their cursors are bound to the share, and the seek runs
    in the share's SQL function (the fetch form of the keyset step)."""
    books = [factories.notebook(owner, "Shared A"), factories.notebook(owner, "Shared B")]
    for book in books:
        for i in range(5):
            factories.note(owner, f"{book.name} entry {i}", notebook_id=book.id)
    shares = [public.open_share(sharing.share_create(actor=owner, notebook_id=b.id)[0].token)
              for b in books]
    theirs = factories.notebook(stranger := factories.owner(), "Theirs")
    factories.note(stranger, "their entry", notebook_id=theirs.id)
    factories.note(stranger, "their other entry", notebook_id=theirs.id)
    their_share = public.open_share(
        sharing.share_create(actor=stranger, notebook_id=theirs.id)[0].token)
    seen, cursor = [], None
    while True:
        notes, cursor = public.page(shares[0], cursor=cursor, limit=2)
        seen += notes
        if cursor is None:
            break
        for other in (shares[1], their_share):
            with pytest.raises(public.InvalidPage):
                public.page(other, cursor=cursor, limit=2)
    assert len(seen) == len({n.id for n in seen}) == 5
    assert [(n.created_at, n.id) for n in seen] == sorted(
        ((n.created_at, n.id) for n in seen), reverse=True)
    caller_cursor = cursor_write(Cursor(binding=caller_binding(owner), fingerprint="notes",
                                        key=(seen[0].created_at, seen[0].id)),
                                 salt=public.CURSOR_SALT)
    with pytest.raises(public.InvalidPage):  # a caller's binding is not a share's
        public.page(shares[0], cursor=caller_cursor, limit=2)
