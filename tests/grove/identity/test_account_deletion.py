"""Account deletion (grove.identity.deletion): revoke first, then hide; the tombstone
stops a late job, a retried operation and a late OAuth callback; `grove purge`."""

from __future__ import annotations

import threading
import time
import uuid
from datetime import timedelta

import httpx
import numpy as np
import pytest
from django.core.management import call_command
from django.db import DatabaseError, connections, transaction
from django.test import Client
from django.utils import timezone

from grove.identity import deletion
from grove.identity.services import account_setup_owner, connection_create_key
from grove.kernel import jobs
from grove.kernel.actor import Actor
from grove.kernel.errors import Gone
from grove.kernel.purge import account_references, tombstone_name
from grove.kernel.tenancy import tenant
from grove.models import Account, Connection, Job
from notebooks import services
from notebooks.models import Note, NoteEmbedding, Revision
from sharing.services import share_create
from tests import factories
from tests.fake_embedder import FakeEmbedder
from tests.grove.identity.oauth_helpers import consent, exchange, new_flow, refresh, register

pytestmark = pytest.mark.usefixtures("committed")

PASSWORD = "correct horse battery"  # factories.account's


def library(actor: Actor) -> dict:
    notebook = factories.notebook(actor, "Garden")
    note = factories.note(actor, "Tomatoes need full sun.", notebook_id=str(notebook.id))
    key = connection_create_key(actor=actor, name="script", personal=True,
                                all_notebooks=True).key
    share, _ = share_create(actor=actor, note_id=note.id)
    return {"notebook": notebook, "note": note, "key": key, "share": share}


def signed_in(account_id: uuid.UUID) -> Client:
    web = Client()
    web.force_login(Account.objects.get(id=account_id))
    return web


def owner_rows(model, account_id: uuid.UUID, **filters) -> int:
    """Rows as the schema owner sees them (a deleted account's context opens nothing
    for the runtime role)."""
    with tenant(account_id, using="owner"):
        return model.objects.using("owner").filter(account_id=account_id, **filters).count()


def test_a_wrong_password_deletes_nothing():
    actor = factories.owner()
    made = library(actor)
    web = signed_in(actor.account_id)

    answer = web.post("/settings/delete-account/", {"password": "not it"})

    assert answer.status_code == 400
    assert b"not your password" in answer.content
    assert Account.objects.get(id=actor.account_id).is_active
    assert Client().get(f"/v1/notes/{made['note'].id}",
                        headers={"Authorization": f"Bearer {made['key']}"}).status_code == 200


def test_the_page_offers_the_final_export_first():
    actor = factories.owner()
    page = signed_in(actor.account_id).get("/settings/delete-account/")
    assert page.status_code == 200
    html = page.content.decode()
    assert html.index('href="/settings/archive"') < html.index('name="password"')
    assert 'href="/v1/export/markdown"' in html


def test_every_way_in_is_refused_before_anything_is_hidden(site_url):
    """A hider that runs in the hide transaction asks the running server with every
    credential: the revoke has committed by then, and each is refused."""
    actor = factories.owner()
    made = library(actor)
    owner_web = signed_in(actor.account_id)
    access = exchange(flow := new_flow(register()), consent(owner_web, flow)["code"])[1]
    late = new_flow(register(name="Late agent"))
    late_code = consent(owner_web, late)["code"]  # the callback that comes after
    key = {"Authorization": f"Bearer {made['key']}"}
    bearer = {"Authorization": f"Bearer {access['access_token']}"}
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}
    with httpx.Client(base_url=site_url, timeout=10) as http:
        assert http.get(f"/v1/notes/{made['note'].id}", headers=key).status_code == 200
        assert http.get(made["share"].url).status_code == 200
        assert http.post("/mcp", json=initialize, headers=bearer).status_code == 200

    seen: dict[str, int] = {}

    def probe(account_id: uuid.UUID, now) -> int:
        with httpx.Client(base_url=site_url, timeout=10) as http:
            seen["key"] = http.get(f"/v1/notes/{made['note'].id}", headers=key).status_code
            seen["share"] = http.get(
                made["share"].url).status_code
            seen["oauth"] = http.post("/mcp", json=initialize, headers=bearer).status_code
        return 0

    deletion.register_hider("probe", probe)
    try:
        done = owner_web.post("/settings/delete-account/", {"password": PASSWORD})
    finally:
        deletion._HIDERS.pop("probe")

    assert done.status_code == 200 and b"Your account was deleted" in done.content
    assert seen == {"key": 401, "share": 404, "oauth": 401}
    # For good: revoked rows, no OAuth token or grant left, a late code redeems nothing.
    assert owner_rows(Connection, actor.account_id, status="active") == 0
    assert exchange(late, late_code)[0] == 400
    assert refresh(flow.client_id, access["refresh_token"])[0] == 400
    # Hidden: the runtime role sees nothing; every note is deleted, the tombstone set.
    with tenant(actor.account_id):
        assert Note.objects.count() == 0
    assert owner_rows(Note, actor.account_id) == 1
    assert owner_rows(Note, actor.account_id, status="deleted") == 1
    assert Account.objects.get(id=actor.account_id).deleted_at is not None
    # This browser is signed out.
    assert owner_web.get("/settings/").status_code == 302


def test_requests_racing_the_deletion_get_nothing_after_the_revoke(site_url):
    actor = factories.owner()
    made = library(actor)
    key = {"Authorization": f"Bearer {made['key']}"}
    revoked_by: list[float] = []
    log: list[tuple[float, str, int]] = []  # (start, kind, status)
    stop = threading.Event()

    def client(writer: bool) -> None:
        with httpx.Client(base_url=site_url, timeout=20) as http:
            while not stop.is_set():
                start = time.monotonic()
                if writer:
                    status = http.post("/v1/notes", headers=key, json={
                        "content": f"Racing save {uuid.uuid4()}", "kind": "fact",
                        "operationId": str(uuid.uuid4())}).status_code
                else:
                    status = http.get(f"/v1/notes/{made['note'].id}", headers=key).status_code
                log.append((start, "write" if writer else "read", status))

    def mark(account_id: uuid.UUID, now) -> int:
        revoked_by.append(time.monotonic())  # the revoke has committed
        return 0

    threads = [threading.Thread(target=client, args=(i % 2 == 0,)) for i in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(1.0)
    deletion.register_hider("mark", mark)
    try:
        deletion.account_delete(actor=actor, password=PASSWORD)
    finally:
        deletion._HIDERS.pop("mark")
    time.sleep(1.0)
    stop.set()
    for thread in threads:
        thread.join()

    before = [status for start, _, status in log if start < revoked_by[0]]
    after = [status for start, _, status in log if start >= revoked_by[0]]
    assert before and after
    assert {200, 201} & set(before)
    assert set(after) == {401}, sorted(set(after))
    # Whatever was saved before is there with its revision, hidden with the account.
    with tenant(actor.account_id, using="owner"):
        notes = list(Note.objects.using("owner").filter(account_id=actor.account_id))
        assert all(Revision.objects.using("owner").filter(note_id=n.id, version=n.version)
                   .exists() for n in notes)
    with tenant(actor.account_id):
        assert Note.objects.count() == 0


class DeletingEmbedder(FakeEmbedder):
    """The owner deletes the account while the worker computes the vectors."""

    def __init__(self, actor: Actor):
        self.actor = actor

    def embed(self, texts: list[str]) -> np.ndarray:
        deletion.account_delete(actor=self.actor, password=PASSWORD)
        return super().embed(texts)


def test_the_tombstone_stops_a_job_that_finishes_after_the_deletion(monkeypatch):
    actor = factories.owner()
    note = factories.note(actor, "Basil likes warmth.")
    job = owner_job(actor.account_id)
    monkeypatch.setattr("notebooks.services.indexing.get_embedder",
                        lambda: DeletingEmbedder(actor))

    jobs.run(job.id, actor.account_id)

    assert Account.objects.get(id=actor.account_id).deleted_at is not None
    assert owner_rows(NoteEmbedding, actor.account_id) == 0
    with tenant(actor.account_id, using="owner"):
        finished = Job.objects.using("owner").get(id=job.id)
        assert finished.status == "discarded"
        assert Note.objects.using("owner").get(id=note.id).indexing != "indexed"


def test_a_delayed_job_is_discarded_and_runs_nothing(monkeypatch):
    actor = factories.owner()
    factories.note(actor, "Mint spreads.")
    job = owner_job(actor.account_id)
    with tenant(actor.account_id):
        Job.objects.filter(id=job.id).update(run_after=timezone.now() + timedelta(hours=1))
    deletion.account_delete(actor=actor, password=PASSWORD)
    with tenant(actor.account_id, using="owner"):
        Job.objects.using("owner").filter(id=job.id).update(run_after=timezone.now())
    monkeypatch.setattr("notebooks.services.indexing.get_embedder", FakeEmbedder)

    assert jobs.run(job.id, actor.account_id) == 0
    assert owner_rows(NoteEmbedding, actor.account_id) == 0
    with tenant(actor.account_id, using="owner"):
        assert Job.objects.using("owner").get(id=job.id).status == "discarded"


def test_a_job_queued_again_after_the_deletion_meets_the_tombstone(monkeypatch):
    """Not the discard: the job is queued again behind the deletion's back (as a worker
    with a stale view would find it), and the account's empty context stops it."""
    actor = factories.owner()
    note = factories.note(actor, "Chives come back every year.")
    job = owner_job(actor.account_id)
    deletion.account_delete(actor=actor, password=PASSWORD)
    with tenant(actor.account_id, using="owner"):
        Job.objects.using("owner").filter(id=job.id).update(status="queued", finished_at=None,
                                                           last_error="")
    monkeypatch.setattr("notebooks.services.indexing.get_embedder", FakeEmbedder)

    jobs.run(job.id, actor.account_id)
    jobs.drain(actor.account_id, "embed")

    assert owner_rows(NoteEmbedding, actor.account_id) == 0
    with tenant(actor.account_id):  # what the worker's role sees of the account
        assert not Job.objects.exists() and not Note.objects.filter(id=note.id).exists()
        with pytest.raises(DatabaseError, match="row-level security"):
            with transaction.atomic():
                NoteEmbedding.objects.create(account_id=actor.account_id, note_id=note.id,
                                             profile="x", dimension=1, content_hash="x")


def test_only_the_schema_owner_may_change_a_tombstone():
    actor = factories.owner()
    deletion.account_delete(actor=actor, password=PASSWORD)
    with pytest.raises(DatabaseError), transaction.atomic():
        Account.objects.filter(id=actor.account_id).update(deleted_at=None)
    assert Account.objects.get(id=actor.account_id).deleted_at is not None


def test_a_deletion_cut_short_after_the_revoke_is_finished():
    actor = factories.owner()
    made = library(actor)

    def crash(account_id: uuid.UUID, now) -> int:
        raise RuntimeError("the process died here")

    deletion.register_hider("crash", crash)
    try:
        with pytest.raises(RuntimeError):
            deletion.account_delete(actor=actor, password=PASSWORD)
    finally:
        deletion._HIDERS.pop("crash")
    stuck = Account.objects.get(id=actor.account_id)
    assert not stuck.is_active and stuck.deletion_requested_at and stuck.deleted_at is None
    assert Client().get(f"/v1/notes/{made['note'].id}",
                        headers={"Authorization": f"Bearer {made['key']}"}).status_code == 401

    assert deletion.finish_deletions() == 1  # beat's `grove.finish_deletions`

    assert Account.objects.get(id=actor.account_id).deleted_at is not None
    assert owner_rows(Note, actor.account_id, status="deleted") == 1
    assert deletion.finish_deletions() == 0


def owner_job(account_id: uuid.UUID) -> Job:
    with tenant(account_id):
        return Job.objects.get(account_id=account_id, status="queued")


def test_a_retried_operation_id_recreates_nothing():
    actor = factories.owner()
    key = connection_create_key(actor=actor, name="agent", personal=True).key
    agent = connection_actor(actor.account_id)
    operation = str(uuid.uuid4())
    body = {"content": "Water at dawn.", "kind": "fact", "operationId": operation}
    headers = {"Authorization": f"Bearer {key}"}
    assert Client().post("/v1/notes", body, content_type="application/json",
                         headers=headers).status_code == 201
    deletion.account_delete(actor=actor, password=PASSWORD)
    notes_then = owner_rows(Note, actor.account_id)

    retried = Client().post("/v1/notes", body, content_type="application/json", headers=headers)
    assert retried.status_code == 401
    # A caller that authenticated just before the deletion, retrying now: refused too.
    for op_id in (operation, str(uuid.uuid4())):
        with pytest.raises(Gone) as refused:
            services.note_remember(actor=agent, operation_id=op_id, content="Water at dawn.",
                                   kind="fact")
        assert refused.value.code == "account_deleted"
    assert owner_rows(Note, actor.account_id) == notes_then


def connection_actor(account_id: uuid.UUID) -> Actor:
    with tenant(account_id):
        return Actor.for_connection(Connection.objects.get(account_id=account_id,
                                                           status="active"))


def test_purge_empties_deleted_accounts_and_old_deleted_notes_only():
    gone, kept = factories.owner(), factories.owner()
    library(gone)
    library(kept)
    old_op = factories.op()
    old = services.note_remember(actor=kept, operation_id=old_op, content="Deleted long ago.",
                                 kind="fact").note
    recent = factories.note(kept, "Deleted yesterday.")
    live = factories.note(kept, "Still here.")
    for note in (old, recent):
        services.note_forget(actor=kept, operation_id=factories.op(), items=[str(note.id)])
    with tenant(kept.account_id, using="owner"):
        Note.objects.using("owner").filter(id=old.id).update(
            deleted_at=timezone.now() - timedelta(days=40))
    deletion.account_delete(actor=gone, password=PASSWORD)
    Account.objects.using("owner").filter(id=gone.account_id).update(
        deleted_at=timezone.now() - timedelta(days=40))

    call_command("purge", older_than=30, dry_run=True)
    assert owner_rows(Note, gone.account_id) == 1  # a dry run removes nothing

    call_command("purge", older_than=30)

    with connections["owner"].cursor() as cursor:
        cursor.execute("SELECT table_name FROM information_schema.columns "
                       "WHERE table_schema = 'public' AND column_name = 'account_id'")
        tables = [row[0] for row in cursor.fetchall()]
        assert {"notebooks_termdelta", "notebooks_note"} <= set(tables)
        for table in tables:  # every table with an account column, keys or not
            cursor.execute(f'SELECT count(*) FROM "{table}" WHERE account_id = %s',  # noqa: S608
                           [gone.account_id])
            assert cursor.fetchone()[0] == 0, table
        for table, column in account_references():
            cursor.execute(f'SELECT count(*) FROM "{table}" WHERE "{column}" = %s',  # noqa: S608
                           [gone.account_id])
            assert cursor.fetchone()[0] == 0, table
        # Nothing an operation recorded keeps the purged note's words.
        cursor.execute("SELECT count(*) FROM grove_operation WHERE account_id = %s "
                       "AND result::text LIKE %s", [kept.account_id, "%long ago%"])
        assert cursor.fetchone()[0] == 0
    tombstone = Account.objects.get(id=gone.account_id)
    assert tombstone.username == tombstone_name(gone.account_id) and tombstone.email == ""
    assert tombstone.deleted_at is not None
    assert owner_rows(Note, kept.account_id, id=old.id) == 0
    assert owner_rows(Revision, kept.account_id, note_id=old.id) == 0
    assert owner_rows(Note, kept.account_id, id=recent.id) == 1
    assert owner_rows(Note, kept.account_id, id=live.id, status="active") == 1
    assert owner_rows(Revision, kept.account_id, note_id=live.id) == 1
    with pytest.raises(Gone):  # the purged note's save, replayed: gone, not made again
        services.note_remember(actor=kept, operation_id=old_op, content="Deleted long ago.",
                               kind="fact")


def test_setup_stays_closed_after_the_only_owner_deleted_the_account():
    """Else whoever reached the site first would own it, with the operator's providers."""
    account = account_setup_owner(username="first", password="a long enough passphrase 42")
    deletion.account_delete(actor=Actor.for_session(account.id),
                            password="a long enough passphrase 42")

    assert Client().get("/setup/").status_code in (302, 404)
    refused = Client().post("/setup/", {"username": "second",
                                        "password": "another long passphrase 7",
                                        "password_again": "another long passphrase 7"})
    assert refused.status_code in (302, 404, 409)
    assert list(Account.objects.values_list("username", flat=True)) == ["first"]
