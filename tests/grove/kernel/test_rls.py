"""Tenant isolation in the database (SPEC §5): raw SQL as the runtime role sees only the
account named by the transaction-local setting, and nothing without one."""

import io
import uuid
import zipfile
from pathlib import PurePosixPath

import pytest
from django.conf import settings
from django.db import DatabaseError, connection, transaction

from ask.models import Proposal, Turn
from ask.services import conversation_create, turn_submit
from grove.kernel import jobs, tenancy
from grove.runtime import dbroles
from notebooks import services
from notebooks.models import IngestUploadFile
from notebooks.services import term_stats as termstats
from notebooks.services.ingest import ingest_file, ingest_root
from notebooks.services.ingest_upload import ingest_upload_start
from sharing import services as share_services
from tests import factories
from tests.factories import op

pytestmark = pytest.mark.django_db

EXPECTED_TABLES = {
    "grove_connection", "grove_operation", "grove_job", "notebooks_notebook",
    "notebooks_note", "notebooks_revision", "notebooks_noteembedding", "notebooks_termstat",
    "notebooks_termdelta", "notebooks_notecount", "notebooks_vision", "notebooks_visionrevision",
    "notebooks_truthdeclaration", "notebooks_truthnote", "notebooks_negativeclaim",
    "notebooks_pendingrevision", "notebooks_ingestedchunk", "notebooks_ingestupload",
    "notebooks_ingestuploadfile", "notebooks_ingestuploadpart", "ask_conversation", "ask_turn",
    "ask_proposal", "sharing_share", "passages_passage", "passages_passagevector",
    "links_link", "links_linkname",
}


# Django's auth tables for the account itself (group membership, admin permissions) are
# identity, read by the login machinery before any tenant context exists; they hold no
# notes data. Every other table with an account_id must be isolated.
IDENTITY_TABLES = {"grove_account_groups", "grove_account_user_permissions"}


def account_tables() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name FROM information_schema.columns "
            "WHERE table_schema = 'public' AND column_name = 'account_id' ORDER BY 1"
        )
        return [row[0] for row in cursor.fetchall() if row[0] not in IDENTITY_TABLES]


def populate(actor):
    """At least one row in every account-owned table."""
    nb = factories.notebook(actor, "Secret project")
    note = factories.note(actor, "secret", notebook_id=nb.id)
    services.note_update(actor=actor, operation_id=op(), note_id=note.id, content="secret 2")
    factories.connection(actor, all_notebooks=True)
    jobs.run_batch(account_id=actor.account_id, kind="embed")  # a vector row too
    with tenancy.tenant(actor), connection.cursor() as cursor:
        # A vector of the table before passages, as an older release still writes it
        # during a rolling upgrade.
        cursor.execute(
            "INSERT INTO notebooks_noteembedding (account_id, note_id, profile, dimension, "
            "content_hash, embedding, created_at) SELECT account_id, id, 'old', 3, "
            "content_hash, '[1,0,0]', now() FROM notebooks_note WHERE id = %s", [note.id])
    termstats.term_stats_refresh(actor=factories.Actor.system(actor.account_id))
    factories.note(actor, "counted by the term statistics triggers")  # a delta row
    factories.note(actor, "links to [[secret]]")  # a link row
    talk, _ = conversation_create(actor=actor, conversation_id=uuid.uuid4())
    asked, _ = turn_submit(actor=actor, conversation_id=talk.id, turn_id=uuid.uuid4(),
                           query="secret?", expected_version=0)
    with tenancy.tenant(actor):
        Proposal.objects.create(account_id=actor.account_id, position=1, kind="edit",
                                turn=Turn.objects.get(client_id=asked.id),
                                state="dropped", drop_reason="malformed")
    share_services.share_create(actor=actor, notebook_id=nb.id)
    services.vision_update(actor=actor, operation_id=op(), notebook_id=nb.id,
                           content="secret vision")
    services.truth_declare(actor=actor, notebook_id=nb.id, note_ids=[note.id])
    services.negative_add(actor=actor, notebook_id=nb.id, claim="secret falsehood")
    agent = factories.connection(actor, notebooks=[nb.id])
    services.note_update(actor=agent, operation_id=op(), note_id=note.id, content="held")
    ingest_file(actor=actor, root=ingest_root(actor, str(nb.id)), path=PurePosixPath("a.md"),
                raw=b"secret ingested")
    upload = io.BytesIO()
    with zipfile.ZipFile(upload, "w") as archive:
        archive.writestr("b.md", "secret uploaded")
    started = ingest_upload_start(actor=actor, notebook=str(nb.id), archive=upload,
                                  name="u.zip")  # its parts, until its job unpacks them
    with tenancy.tenant(actor):  # a file waiting for the job (as it would once unpacked)
        IngestUploadFile.objects.create(account_id=actor.account_id, upload_id=started.id,
                                        path="b.md", content=b"secret uploaded")
    return nb, note


def count(table: str, where: str = "true", params=()) -> int:
    with connection.cursor() as cursor:
        # Table names come from information_schema, conditions from this module.
        cursor.execute(f'SELECT count(*) FROM "{table}" WHERE {where}', params)  # noqa: S608
        return cursor.fetchone()[0]


def set_context(account_id) -> None:
    """The context the app itself sets (grove.kernel.tenancy), in the current transaction."""
    with connection.cursor() as cursor:
        tenancy.enter(cursor, account_id)


def test_every_account_table_has_forced_rls_and_a_policy():
    tables = account_tables()
    assert EXPECTED_TABLES <= set(tables)
    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(
                "SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE relname = %s",
                [table])
            assert cursor.fetchone() == (True, True), table
            cursor.execute(
                "SELECT polname, polcmd, polpermissive, "
                "ARRAY(SELECT CASE WHEN r = 0 THEN 'public' ELSE r::regrole::text END "
                "      FROM unnest(polroles) r) "
                "FROM pg_policy WHERE polrelid = %s::regclass ORDER BY polname", [table])
            policies = cursor.fetchall()
            assert ("account_isolation", "*", True, ["public"]) in policies, table
            # The only other policies: the owner's read paths for the security-definer
            # functions of recall (notebooks 0007, passages 0002), of share links (sharing 0002,
            # 0005), of
            # job dispatch (grove 0008), of search's word variants (notebooks 0017) and
            # of API keys (grove 0011) — never the runtime role.
            others = sorted(p for p in policies if p[0] != "account_isolation")
            owner = settings.DATABASES["owner"]["USER"]
            expected = {
                "grove_connection": [("key_contact", "w", True, [owner]),
                                     ("key_lookup", "r", True, [owner])],
                "grove_job": [("job_dispatch", "r", True, [owner])],
                "notebooks_note": [("lexical_lookup", "r", True, [owner])],
                "passages_passage": [("lexical_lookup", "r", True, [owner])],
                "notebooks_notebook": [("share_lookup", "r", True, [owner])],
                "links_link": [("share_lookup", "r", True, [owner])],
                "notebooks_termstat": [("variant_lookup", "r", True, [owner])],
                "notebooks_termdelta": [("variant_lookup", "r", True, [owner])],
                "sharing_share": [("share_lookup", "r", True, [owner]),
                                  ("share_views", "w", True, [owner])],
            }
            assert others == expected.get(table, []), table


def test_raw_sql_sees_only_the_context_account():
    a, b = factories.owner(), factories.owner()
    populate(a)
    populate(b)
    with transaction.atomic():
        set_context(a.account_id)
        for table in account_tables():
            assert count(table, "account_id = %s", [b.account_id]) == 0, table
            assert count(table) == count(table, "account_id = %s", [a.account_id]) > 0, table
        set_context(b.account_id)
        for table in account_tables():
            assert count(table, "account_id = %s", [a.account_id]) == 0, table
            assert count(table) > 0, table


def test_without_a_context_nothing_is_visible():
    populate(factories.owner())
    with transaction.atomic():
        set_context(None)
        for table in account_tables():
            assert count(table) == 0, table


def test_writes_to_another_account_are_refused_or_touch_nothing():
    a, b = factories.owner(), factories.owner()
    nb_b, note_b = populate(b)
    with transaction.atomic():
        set_context(a.account_id)
        with connection.cursor() as cursor:
            cursor.execute("UPDATE notebooks_note SET content = 'pwned' WHERE id = %s",
                           [note_b.id])
            assert cursor.rowcount == 0
            cursor.execute("DELETE FROM notebooks_notebook WHERE id = %s", [nb_b.id])
            assert cursor.rowcount == 0
    with pytest.raises(DatabaseError, match="row-level security"), transaction.atomic():
        set_context(a.account_id)
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO notebooks_notebook (id, account_id, name, created_at, updated_at) "
                "VALUES (%s, %s, 'planted', now(), now())", [uuid.uuid4(), b.account_id])
    assert factories.note_row(b, note_b.id).content == "secret 2"


@pytest.mark.django_db(databases=["default", "owner"])
def test_runtime_role_is_unprivileged_and_owner_role_is_refused():
    assert dbroles.runtime_role_problems("default") == []
    problems = dbroles.runtime_role_problems("owner")
    assert problems and "owns" in problems[0]


def test_the_architecture_document_names_every_table_with_row_level_security():
    """docs/architecture.md lists the account-owned tables; it must be the database's list."""
    import re
    from pathlib import Path

    with connection.cursor() as cursor:
        cursor.execute("SELECT relname FROM pg_class WHERE relkind = 'r' "
                       "AND relrowsecurity AND relforcerowsecurity ORDER BY 1")
        protected = {row[0] for row in cursor.fetchall()}
    document = (Path(__file__).resolve().parents[3] / "docs" / "architecture.md").read_text()
    start = document.index("* Every account-owned table")
    listed = set(re.findall(r"`((?:grove|passages|links|notebooks|ask|sharing)_[a-z_]+)`",
                            document[start:document.index("policy", start)]))
    assert listed == protected
    assert set(account_tables()) <= protected
