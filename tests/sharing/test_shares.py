"""Share links (SPEC §9): only the owner's website session publishes; unknown, forged
and revoked links are the same 404; membership is live; a visitor can reach nothing but
the shared target — checked with a few hundred crafted URLs and cursors, and at the
database level; headers, page caps and the public rate limit."""

from __future__ import annotations

import base64
import itertools
import json
import uuid
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client, override_settings
from django.utils import timezone

from grove.kernel.actor import Actor
from grove.kernel.errors import Forbidden, NotFound
from grove.kernel.tenancy import tenant
from grove.models import Account, Connection
from notebooks import services as notes
from notebooks.models import Note
from sharing import selectors as public
from sharing import services, tokens
from tests import factories
from tests.api.conftest import Caller, new_key
from tests.api.test_api_core import session_caller

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_rate_counters():
    cache.clear()


@pytest.fixture
def owner():
    return factories.owner()


def visit(path: str, **params):
    return Client().get(path, params)


def share_notebook(owner, notebook, **options):
    share, created = services.share_create(actor=owner, notebook_id=notebook.id, **options)
    assert created
    return share


def shared_ids(share) -> list[str]:
    """The ids a share's JSON lists (one page holds them all here), checking that its
    count (`meta.available`, grove_share_count) agrees with them in every state."""
    body = visit(f"/public/shares/{share.token}.json").json()
    assert body["meta"]["available"] == len(body["data"]), body["meta"]
    return [n["id"] for n in body["data"]]


def test_a_note_share_renders_read_only_and_counts_views(owner):
    note = factories.note(owner, "# Sourdough\n\nBake at **240 °C**.<script>alert(1)</script>")
    share, created = services.share_create(actor=owner, note_id=note.id)
    assert created and share.url.endswith(f"/public/shares/{share.token}")
    again, created_again = services.share_create(actor=owner, note_id=note.id)
    assert not created_again and again.token == share.token  # one live link per note
    page = visit(f"/public/shares/{share.token}")
    html = page.content.decode()
    assert page.status_code == 200 and "<strong>240 °C</strong>" in html
    assert "<script>alert" not in html and "csrf" not in html.lower()
    assert page["X-Robots-Tag"] == "noindex, nofollow"
    assert page["Cache-Control"] == "public, max-age=0, s-maxage=60"
    assert page["Referrer-Policy"] == "no-referrer" and "Set-Cookie" not in page
    data = visit(f"/public/shares/{share.token}.json").json()
    assert data["data"]["content"].startswith("# Sourdough")
    assert set(data["data"]) == {"id", "content", "updated"}
    assert data["meta"]["share"] == "note" and data["meta"]["maxAgeSeconds"] == 60
    [listed] = public.share_list(actor=owner)
    assert listed.view_count == 2 and listed.last_viewed_at is not None


def test_the_json_carries_only_what_the_page_shows(owner):
    """Edited notes in a note share and a notebook share: every JSON note holds its id,
    content and the day shown on the page — no version, no kind, no exact timestamps."""
    book = factories.notebook(owner, "Shared")
    note = factories.note(owner, "# Bread\n\nFirst try.", notebook_id=book.id)
    for text in ("# Bread\n\nSecond try.", "# Bread\n\nThird try."):
        notes.note_update(actor=owner, operation_id=uuid.uuid4(), note_id=note.id,
                          content=text)
    note_share, _ = services.share_create(actor=owner, note_id=note.id)
    book_share = share_notebook(owner, book)
    with tenant(owner):
        day = timezone.localtime(Note.objects.get(id=note.id).updated_at).date().isoformat()
    pages = {
        f"/public/shares/{note_share.token}": [".json"],
        f"/public/shares/{book_share.token}": [".json", "/notes.json"],
        f"/public/shares/{book_share.token}/notes/{note.id}": [".json"],
    }
    for page_path, json_suffixes in pages.items():
        html = visit(page_path).content.decode()
        for suffix in json_suffixes:
            data = visit(page_path + suffix).json()["data"]
            found = data if isinstance(data, list) else [data]
            assert [n["id"] for n in found] == [str(note.id)]
            for shown in found:
                assert set(shown) == {"id", "content", "updated"}, page_path + suffix
                assert shown["content"] == "# Bread\n\nThird try."
                assert shown["updated"] == day
                assert f"Updated {day}" in html and 'class="kind"' not in html
    book_html = visit(f"/public/shares/{book_share.token}").content.decode()
    assert f"/notes/{note.id}" in book_html  # the id: the page links to the note by it


def test_unknown_forged_and_revoked_links_are_the_same_404(owner):
    note = factories.note(owner, "Shared for a while.")
    share, _ = services.share_create(actor=owner, note_id=note.id)
    assert visit(f"/public/shares/{share.token}").status_code == 200
    services.share_revoke(actor=owner, share_id=share.id)
    forged = tokens.token_for(uuid.uuid4())[:-4] + "AAAA"
    unknown = tokens.token_for(uuid.uuid4())  # genuine MAC, no such share
    answers = []
    for token in (share.token, unknown, forged, "nope", "x" * 43, share.token.lower()):
        for suffix in ("", ".json"):
            response = Client().get(f"/public/shares/{token}{suffix}",
                                    headers={"X-Request-Id": "same-request-id"})
            answers.append((suffix, response.status_code, response.content,
                            response["Cache-Control"], response["X-Robots-Tag"]))
    for suffix in ("", ".json"):
        same = {a[1:] for a in answers if a[0] == suffix}
        assert len(same) == 1 and next(iter(same))[0] == 404
    with pytest.raises(NotFound):  # revoking is final: the share is gone
        services.share_revoke(actor=owner, share_id=share.id)
    fresh, created = services.share_create(actor=owner, note_id=note.id)
    assert created and fresh.token != share.token  # a new link; the old one stays dead
    assert visit(f"/public/shares/{share.token}").status_code == 404


def test_membership_is_live(owner):
    book = factories.notebook(owner, "Recipes")
    elsewhere = factories.notebook(owner, "Elsewhere")
    first = factories.note(owner, "Pancakes.", notebook_id=book.id)
    share = share_notebook(owner, book)
    assert shared_ids(share) == [str(first.id)]
    added = factories.note(owner, "Waffles.", notebook_id=book.id)
    assert shared_ids(share) == [str(added.id), str(first.id)]
    notes.note_archive(actor=owner, operation_id=uuid.uuid4(), items=[{"id": added.id}])
    assert shared_ids(share) == [str(first.id)]
    notes.note_restore(actor=owner, operation_id=uuid.uuid4(), items=[{"id": added.id}])
    assert shared_ids(share) == [str(added.id), str(first.id)]
    notes.note_move(actor=owner, operation_id=uuid.uuid4(), note_ids=[added.id],
                    notebook_id=elsewhere.id)
    assert shared_ids(share) == [str(first.id)]
    assert visit(f"/public/shares/{share.token}/notes/{added.id}").status_code == 404
    soon = factories.note(owner, "Crêpes.", notebook_id=book.id, retention_days=1)
    assert str(soon.id) in shared_ids(share)
    with factories.tenant(owner):
        # A day back: the share reads the database's now(), which is the start of this
        # test's transaction — a second back from the test's clock may not be past it.
        Note.objects.filter(id=soon.id).update(expires_at=timezone.now() - timedelta(days=1))
    assert shared_ids(share) == [str(first.id)]  # past expiry: gone at once
    note_share = services.share_create(actor=owner, note_id=first.id)[0]
    assert note_share.available
    notes.note_forget(actor=owner, operation_id=uuid.uuid4(), items=[{"id": first.id}])
    assert shared_ids(share) == []
    listed = {s.id: s.available for s in public.share_list(actor=owner)}
    assert listed == {share.id: True, note_share.id: False}  # the Shares page says so
    web = Client()
    web.force_login(Account.objects.get(id=owner.account_id))
    assert "not available now" in web.get("/shares/").content.decode()
    page = visit(f"/public/shares/{share.token}").content.decode()
    assert "no notes to show" in page


def test_head_works_and_a_deactivated_account_shares_nothing(owner):
    from grove.models import Account

    note = factories.note(owner, "Visible while the account is active.")
    share, _ = services.share_create(actor=owner, note_id=note.id)
    assert Client().head(f"/public/shares/{share.token}").status_code == 200
    Account.objects.filter(id=owner.account_id).update(is_active=False)
    assert visit(f"/public/shares/{share.token}").status_code == 404
    assert visit(f"/public/shares/{share.token}.json").status_code == 404


def test_sub_notebooks_only_when_the_share_says_so(owner):
    parent = factories.notebook(owner, "Garden")
    child = factories.notebook(owner, "Vegetables", parent=parent.id)
    top = factories.note(owner, "Mulch in autumn.", notebook_id=parent.id)
    deep = factories.note(owner, "Sow beans in May.", notebook_id=child.id)
    direct = share_notebook(owner, parent)
    assert shared_ids(direct) == [str(top.id)]
    services.share_revoke(actor=owner, share_id=direct.id)
    whole = share_notebook(owner, parent, include_subnotebooks=True)
    assert set(shared_ids(whole)) == {str(top.id), str(deep.id)}
    notes.notebook_archive(actor=owner, operation_id=uuid.uuid4(), notebook_id=child.id)
    assert shared_ids(whole) == [str(top.id)]  # an archived sub-notebook drops out
    note_share = services.share_create(actor=owner, note_id=top.id)[0]
    assert visit(f"/public/shares/{note_share.token}/notes/{deep.id}").status_code == 404


def test_pages_are_capped_and_cursors_bound_to_their_share(owner):
    book = factories.notebook(owner, "Log")
    for i in range(7):
        factories.note(owner, f"Entry {i}", notebook_id=book.id)
    share = share_notebook(owner, book)
    seen, cursor = [], None
    while True:
        params = {"limit": 3, **({"cursor": cursor} if cursor else {})}
        body = visit(f"/public/shares/{share.token}/notes.json", **params).json()
        seen += [n["id"] for n in body["data"]]
        cursor = body["meta"]["nextCursor"]
        if not cursor:
            break
    assert len(seen) == len(set(seen)) == 7
    for bad in (0, 51, "many"):
        response = visit(f"/public/shares/{share.token}/notes.json", limit=bad)
        assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_page"
    html = visit(f"/public/shares/{share.token}", limit=3).content.decode()
    assert "More notes" in html


def test_only_the_website_owner_publishes(owner):
    note = factories.note(owner, "Private.")
    key, agent = new_key(owner)  # every notebook and Personal: still not allowed
    refused = Caller(Client(), key).post("/shares", {"noteId": str(note.id)})
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "session_required"
    assert Caller(Client(), key).get("/shares").status_code == 403
    with factories.tenant(owner):  # an approved OAuth client with every notebook
        row = Connection.objects.create(
            account_id=owner.account_id, name="Claude", kind=Connection.Kind.OAUTH,
            status=Connection.Status.ACTIVE, oauth_client_id="claude-test",
            capabilities=["memory:read", "memory:write"],
            grant_personal=True, grant_all=True, grant_notebooks=[])
    with pytest.raises(Forbidden) as refused_oauth:
        services.share_create(actor=Actor.for_connection(row), note_id=note.id)
    assert refused_oauth.value.status == 403 and refused_oauth.value.code == "session_required"
    session = session_caller(owner)
    made = session.post("/shares", {"noteId": str(note.id)})
    assert made.status_code == 201
    token = made.json()["data"]["token"]
    assert session.post("/shares", {"noteId": str(note.id)}).status_code == 200
    assert [s["token"] for s in session.get("/shares").json()["data"]] == [token]
    assert Caller(Client(), key).post(
        f"/shares/{made.json()['data']['id']}/revoke").status_code == 403
    assert visit(f"/public/shares/{token}").status_code == 200
    assert session.post(f"/shares/{made.json()['data']['id']}/revoke").status_code == 200
    assert visit(f"/public/shares/{token}").status_code == 404


def test_indexing_only_when_allowed_and_the_public_rate_limit(owner):
    note = factories.note(owner, "Open recipe.")
    share, _ = services.share_create(actor=owner, note_id=note.id, allow_indexing=True)
    page = visit(f"/public/shares/{share.token}")
    assert "X-Robots-Tag" not in page and b"noindex" not in page.content
    with override_settings(GROVE_PUBLIC_RATE_LIMIT=3):
        cache.clear()
        statuses = [visit(f"/public/shares/{share.token}").status_code for _ in range(4)]
        assert statuses == [200, 200, 200, 429]
        limited = visit(f"/public/shares/{share.token}.json")
        assert limited.status_code == 429 and int(limited["Retry-After"]) >= 1
        key, _ = new_key(owner)  # API keys have their own limit
        assert Caller(Client(), key).get(f"/notes/{note.id}").status_code == 200


@override_settings(GROVE_PUBLIC_RATE_LIMIT=0)  # a few hundred requests from one address
def test_isolation_under_crafted_requests(owner):
    """A share of notebook A never yields a note of notebook B, of Personal or of another
    account — whatever ids, cursors or suffixes a visitor tries."""
    book_a = factories.notebook(owner, "A")
    book_b = factories.notebook(owner, "B")
    in_a = [factories.note(owner, f"alpha {i}", notebook_id=book_a.id) for i in range(3)]
    in_b = factories.note(owner, "bravo secret", notebook_id=book_b.id)
    personal = factories.note(owner, "personal secret")
    stranger = factories.owner()
    their_book = factories.notebook(stranger, "Theirs")
    theirs = factories.note(stranger, "stranger secret", notebook_id=their_book.id)
    share = share_notebook(owner, book_a)
    their_share = share_notebook(stranger, their_book)
    their_cursor = visit(f"/public/shares/{their_share.token}/notes.json",
                         limit=1).json()["meta"]["nextCursor"]
    own_cursor = visit(f"/public/shares/{share.token}/notes.json",
                       limit=1).json()["meta"]["nextCursor"]
    foreign_ids = [str(in_b.id), str(personal.id), str(theirs.id), str(their_book.id),
                   str(book_b.id), str(uuid.uuid4()), "1 OR 1=1", "../../notes", "%00"]
    cursors = [their_cursor, own_cursor[:-3] + "abc", own_cursor + "x", "e30", "",
               "' OR '1'='1", "a" * 600, own_cursor.replace(":", ";")]
    variants = []
    for note_id, suffix in itertools.product(foreign_ids, ("", ".json")):
        variants.append(f"/public/shares/{share.token}/notes/{note_id}{suffix}")
    for cursor, limit, path in itertools.product(cursors, ("", "1", "50"),
                                                 ("", ".json", "/notes.json")):
        query = "&".join(p for p in (f"cursor={cursor}" if cursor else "",
                                     f"limit={limit}" if limit else "") if p)
        variants.append(f"/public/shares/{share.token}{path}?{query}")
    for extra in ("?noteId=", "?notebook=", "?id=", "?account="):
        for target in foreign_ids[:4]:
            variants.append(f"/public/shares/{share.token}.json{extra}{target}")
            variants.append(f"/public/shares/{share.token}/notes.json{extra}{target}")
    for note_id, cursor in itertools.product(foreign_ids, cursors):
        variants.append(f"/public/shares/{share.token}/notes/{note_id}?cursor={cursor}")
    # Tokens that are not this share's: another share's id under this one's MAC, ids of
    # notes and notebooks as tokens, and the other share's link for this share's notes.
    raw_ours = base64.urlsafe_b64decode(share.token + "=")
    for target in (their_share.id, in_b.id, book_b.id, book_a.id, in_a[0].id):
        forged = base64.urlsafe_b64encode(target.bytes + raw_ours[16:]).rstrip(b"=").decode()
        for suffix in ("", ".json", "/notes.json", f"/notes/{in_a[0].id}"):
            variants.append(f"/public/shares/{forged}{suffix}")
            variants.append(f"/public/shares/{target}{suffix}")
    for note in in_a:
        variants.append(f"/public/shares/{their_share.token}/notes/{note.id}")
    assert len(variants) > 230
    allowed = {str(n.id) for n in in_a}
    secrets = ("bravo secret", "personal secret", "stranger secret", str(in_b.id),
               str(personal.id), str(theirs.id), str(book_a.id), str(owner.account_id))
    client = Client()
    for path in variants:
        response = client.get(path)
        body = response.content.decode()
        assert response.status_code in (200, 400, 404), path
        assert not any(secret in body for secret in secrets), path
        if response.status_code == 200 and path.split("?")[0].endswith(".json"):
            data = json.loads(body)["data"]
            found = data.get("notes", data) if isinstance(data, dict) else data
            if isinstance(found, dict) and "note" in found:
                found = [found["note"]]
            assert {n["id"] for n in found} <= allowed, path


def test_the_database_read_path_reaches_only_the_share():
    """As the runtime role, with no account context: ordinary queries see nothing (RLS),
    and the share functions return only the share's own live notes."""
    owner = factories.owner()
    book = factories.notebook(owner, "Shared")
    mine = factories.note(owner, "in the share", notebook_id=book.id)
    factories.note(owner, "not in the share")
    other = factories.owner()
    factories.note(other, "someone else's")
    share = share_notebook(owner, book)
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('grove.account_id', '', true)")
        cursor.execute("SELECT count(*) FROM notebooks_note")
        assert cursor.fetchone()[0] == 0
        cursor.execute("SELECT count(*) FROM sharing_share")
        assert cursor.fetchone()[0] == 0
    opened = public.open_share(share.token)
    assert opened is not None and opened.title == "Shared"
    notes_seen, _ = public.page(opened, limit=50)
    assert [n.id for n in notes_seen] == [mine.id]
    assert public.member(opened, uuid.uuid4()) is None


def test_the_public_json_speaks_the_rest_envelope(owner):
    """The same envelope and error shape as `/v1` (with the request id), and sibling
    routes agree: a page of notes is a list in `data` with list meta, one note an object."""
    book = factories.notebook(owner, "Shared")
    note = factories.note(owner, "Only note.", notebook_id=book.id)
    share = share_notebook(owner, book)
    missing = visit(f"/public/shares/{tokens.token_for(uuid.uuid4())}.json")
    assert missing.json() == {"success": False, "error": {
        "code": "share_not_found", "message": "This link does not exist or was revoked by "
        "its owner.", "requestId": missing["X-Request-Id"]}}
    refused = visit(f"/public/shares/{share.token}/notes.json", limit=0)
    assert refused.json()["error"]["requestId"] == refused["X-Request-Id"]
    whole = visit(f"/public/shares/{share.token}.json", limit=5).json()
    paged = visit(f"/public/shares/{share.token}/notes.json", limit=5).json()
    for body in (whole, paged):
        assert body["success"] is True and [n["id"] for n in body["data"]] == [str(note.id)]
        assert {k: v for k, v in body["meta"].items() if k != "generatedAt"} == {
            "share": "notebook", "title": "Shared", "maxAgeSeconds": 60, "returned": 1,
            "available": 1, "limit": 5, "truncated": False, "nextCursor": None}
    one = visit(f"/public/shares/{share.token}/notes/{note.id}.json").json()
    assert one["data"] == whole["data"][0] and one["meta"]["share"] == "notebook"
    with override_settings(GROVE_PUBLIC_RATE_LIMIT=1):
        cache.clear()
        visit(f"/public/shares/{share.token}.json")
        limited = visit(f"/public/shares/{share.token}.json")
        assert limited.status_code == 429
        assert limited.json()["error"] == {
            "code": "rate_limited", "message": "Too many requests for shared pages; try "
            "again soon.", "requestId": limited["X-Request-Id"]}


def test_a_visit_opens_reads_and_counts_in_one_call(owner):
    """`share_visit`: what the link shows and one view counted; refusals count nothing,
    and paging through `/notes.json` is a read (no views)."""
    book = factories.notebook(owner, "Log")
    first = factories.note(owner, "First.", notebook_id=book.id)
    factories.note(owner, "Second.", notebook_id=book.id)
    share = share_notebook(owner, book)

    def views() -> int:
        return {s.id: s.view_count for s in public.share_list(actor=owner)}[share.id]

    opened = services.share_visit(token=share.token, limit="1")
    assert len(opened.notes) == 1 and opened.next_cursor and opened.note is None
    assert views() == 1
    more = services.share_visit(token=share.token, cursor=opened.next_cursor, limit="1")
    assert [n.id for n in more.notes] == [first.id] and more.next_cursor is None
    one = services.share_visit(token=share.token, note_id=str(first.id))
    assert one.note is not None and one.note.id == first.id and views() == 3
    with pytest.raises(public.PageRefused) as refused:
        services.share_visit(token=share.token, limit="51")
    assert refused.value.code == "invalid_page" and refused.value.share.id == share.id
    for bad in ({"token": "nope"}, {"token": share.token, "note_id": str(uuid.uuid4())}):
        with pytest.raises(NotFound) as missing:
            services.share_visit(**bad)
        assert missing.value.code == "share_not_found"
    assert views() == 3
    assert visit(f"/public/shares/{share.token}/notes.json").status_code == 200
    assert views() == 3
    page = visit(f"/public/shares/{share.token}", limit=0)  # a 400 keeps the share's headers
    assert page.status_code == 400 and page["Cache-Control"] == "public, max-age=0, s-maxage=60"
