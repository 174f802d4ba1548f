"""Secret hygiene on the way in (issue 22 item 5, `grove.identity.hygiene`): credentials
are redacted or refused by the account's rule for where the text comes from — before
anything stores, embeds or logs them — over the service, REST, MCP, the website and
`grove ingest`. Real PostgreSQL; the embedder records every text it is given."""

from __future__ import annotations

import json
import logging

import pytest
from django.db import connection
from django.test import Client
from psycopg import sql

from grove.identity import services as identity
from grove.kernel.errors import Forbidden, Invalid
from grove.kernel.tenancy import tenant
from grove.models import Account, Operation
from notebooks import services
from notebooks.models import Note, PendingRevision, Revision
from tests import factories
from tests.api.conftest import Caller, new_key
from tests.factories import op
from tests.mcp.test_protocol import call
from tests.notebooks.test_ingest import index_all, run, write

pytestmark = pytest.mark.django_db

KEY = "AKIA" + "Z4QW8RT2NV6XKP3M"  # an AWS access key id's shape, made up
GITHUB = "ghp_" + "x7Kq2Lm9Vb4Nc8Rt1Yz6Wp3Hs5Jd0Fg2Aa9Q"
MARKED = "[redacted: aws-access-key]"


@pytest.fixture
def owner():
    return factories.owner("alice")


def stored_anywhere(owner, needle: str) -> list[str]:
    """Which of the account's tables hold `needle` in any text column."""
    found = []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = 'public' AND data_type IN ('text', 'character varying', "
            "'jsonb', 'json', 'ARRAY')")
        columns = cursor.fetchall()
    with tenant(owner), connection.cursor() as cursor:
        for table, column in columns:
            cursor.execute(sql.SQL("SELECT count(*) FROM {} WHERE {}::text LIKE %s").format(
                sql.Identifier(table), sql.Identifier(column)), [f"%{needle}%"])
            if cursor.fetchone()[0]:
                found.append(f"{table}.{column}")
    return found


def test_an_explicit_save_is_redacted_and_says_so(owner, embedder, caplog):
    caplog.set_level(logging.DEBUG)
    saved = services.note_remember(actor=owner, operation_id=op(), kind="fact",
                                   content=f"Staging deploys with {KEY} and {GITHUB}.")
    assert saved.redacted == {"aws-access-key": 1, "github-token": 1}
    assert saved.note.content == \
        f"Staging deploys with {MARKED} and [redacted: github-token]."
    index_all(owner)
    assert embedder.seen and all(KEY not in text for text in embedder.seen)
    updated = services.note_update(actor=owner, operation_id=op(), note_id=saved.note.id,
                                   content=f"Now {KEY} again.")
    assert updated.redacted == {"aws-access-key": 1} and updated.content == f"Now {MARKED} again."
    with tenant(owner):
        assert [r.content for r in Revision.objects.filter(note_id=saved.note.id)
                .order_by("version")][-1] == f"Now {MARKED} again."
    assert stored_anywhere(owner, KEY) == [] and stored_anywhere(owner, GITHUB) == []
    assert not [r for r in caplog.records if KEY in r.getMessage()]


def test_an_automatic_capture_holding_a_credential_is_refused_and_writes_nothing(owner):
    agent = factories.connection(owner, personal=True)
    before = factories.table_counts(owner.account_id)
    with pytest.raises(Invalid) as refused:
        services.note_remember(actor=agent, operation_id=op(), kind="fact",
                               capture="automatic", content=f"I noticed {KEY} in the logs.")
    assert refused.value.code == "secret_detected"
    assert refused.value.details == {"kinds": {"aws-access-key": 1}}
    assert KEY not in refused.value.message
    assert factories.table_counts(owner.account_id) == before
    # The same text saved on request is redacted instead.
    saved = services.note_remember(actor=agent, operation_id=op(), kind="fact",
                                   content=f"I noticed {KEY} in the logs.")
    assert saved.note.content == f"I noticed {MARKED} in the logs."


def test_rest_and_mcp_answer_the_same(owner):
    key, _ = new_key(owner)
    api = Caller(Client(), key)
    refused = api.post("/notes", {"content": f"seen {KEY}", "kind": "fact",
                                  "capture": "automatic", "operationId": str(op())})
    assert refused.status_code == 400
    body = refused.json()
    assert body["error"]["code"] == "secret_detected"
    assert body["error"]["details"] == {"kinds": {"aws-access-key": 1}}
    assert KEY not in refused.content.decode()
    saved = api.post("/notes", {"content": f"seen {KEY}", "kind": "fact",
                                "operationId": str(op())})
    assert saved.status_code in (200, 201)
    assert saved.json()["data"]["redacted"] == {"aws-access-key": 1}
    result = call(key, "remember", {"content": f"mcp {KEY}", "kind": "fact",
                                    "capture": "automatic"})
    assert result["isError"] is True and "secret_detected" in json.dumps(result)
    assert KEY not in json.dumps(result)
    result = call(key, "remember", {"content": f"mcp {KEY}", "kind": "fact"})
    assert result["isError"] is False
    assert result["structuredContent"]["redacted"] == {"aws-access-key": 1}
    with tenant(owner):
        assert not Note.objects.filter(content__contains=KEY).exists()
        assert Operation.objects.filter(account_id=owner.account_id).count() == 2


def test_the_owners_rules_and_patterns(owner):
    agent = factories.connection(owner, personal=True)
    with pytest.raises(Forbidden):  # the owner's choice, on the website only
        identity.account_set_secret_rules(actor=agent, on_ingest="redact",
                                          on_automatic="redact", on_explicit="redact",
                                          patterns=[])
    for bad, code in ((dict(on_explicit="ask"), "invalid_secret_action"),
                      (dict(patterns=[{"name": "x", "pattern": "(a)\\1"}]),
                       "invalid_secret_pattern"),
                      (dict(patterns=[{"name": "x", "pattern": ".*"}]),
                       "invalid_secret_pattern"),
                      (dict(patterns=[{"name": "<b>", "pattern": "B-[0-9]+"}]),
                       "invalid_secret_pattern"),
                      (dict(patterns="B-[0-9]+"), "invalid_secret_pattern")):
        rules = dict(on_ingest="redact", on_automatic="refuse", on_explicit="redact",
                     patterns=[]) | bad
        with pytest.raises(Invalid) as refused:
            identity.account_set_secret_rules(actor=owner, **rules)
        assert refused.value.code == code
    account = Account.objects.get(id=owner.account_id)
    assert (account.secrets_on_explicit, account.secret_patterns) == ("redact", [])
    saved = identity.account_set_secret_rules(
        actor=owner, on_ingest="refuse", on_automatic="refuse", on_explicit="refuse",
        patterns=[{"name": "badge", "pattern": "BADGE-[0-9]{4}"}])
    assert saved.secrets_on_explicit == "refuse"
    assert saved.secret_patterns[0].name == "badge"
    with pytest.raises(Invalid) as refused:
        services.note_remember(actor=owner, operation_id=op(), kind="fact",
                               content="door BADGE-1234")
    assert refused.value.details == {"kinds": {"custom-badge": 1}}
    identity.account_set_secret_rules(
        actor=owner, on_ingest="redact", on_automatic="refuse", on_explicit="redact",
        patterns=[{"name": "badge", "pattern": "BADGE-[0-9]{4}"}])
    saved_note = services.note_remember(actor=owner, operation_id=op(), kind="fact",
                                        content="door BADGE-1234")
    assert saved_note.note.content == "door [redacted: custom-badge]"


def test_a_held_change_keeps_the_marker_not_the_credential(owner):
    notebook = factories.notebook(owner, "Ops")
    rule = factories.note(owner, "Deploy keys live in the vault.", notebook_id=notebook.id)
    services.truth_declare(actor=owner, notebook_id=notebook.id, note_ids=[rule.id])
    agent = factories.connection(owner, notebooks=[notebook.id])
    held = services.note_update(actor=agent, operation_id=op(), note_id=rule.id,
                                content=f"Deploy key is {KEY}.")
    assert held.pending_revision is not None and held.redacted == {"aws-access-key": 1}
    with tenant(owner):
        pending = PendingRevision.objects.get(id=held.pending_revision.id)
    assert pending.changes["content"] == f"Deploy key is {MARKED}."


def test_ingest_redacts_by_default_and_skips_when_the_owner_refuses(owner, embedder, tmp_path):
    write(tmp_path, {"ops.md": f"# Ops\n\nThe CI key is {KEY}.\n",
                     "plain.md": "# Plain\n\nNothing secret here.\n"})
    out = run(tmp_path)
    assert "1 aws-access-key" in out
    with tenant(owner):
        texts = list(Note.objects.values_list("content", flat=True))
    assert any(MARKED in text for text in texts) and not any(KEY in t for t in texts)
    identity.account_set_secret_rules(actor=owner, on_ingest="refuse",
                                      on_automatic="refuse", on_explicit="redact",
                                      patterns=[])
    write(tmp_path, {"more.md": f"Another key {KEY}\n"})
    out = run(tmp_path)
    # The rules changed, so every file is looked at again; the ones with credentials
    # are skipped with why, and what an earlier run stored stays as it was.
    assert "skipped (holds a credential (aws-access-key); this account refuses them): 2" in out
    with tenant(owner):
        assert not Note.objects.filter(content__contains="Another key").exists()
    assert stored_anywhere(owner, KEY) == []
    assert all(KEY not in text for text in embedder.seen)



def test_markers_that_make_a_note_too_long_are_a_clean_400(owner):
    text = ("password=Zq9x!\n" * 430)[:5990]
    with pytest.raises(Invalid) as refused:
        services.note_remember(actor=owner, operation_id=op(), kind="fact", content=text)
    assert refused.value.code == "content_too_long"
    assert factories.table_counts(owner.account_id)["notes"] == 0


def test_an_agent_cannot_read_the_owners_patterns(owner):
    identity.account_set_secret_rules(
        actor=owner, on_ingest="redact", on_automatic="refuse", on_explicit="redact",
        patterns=[{"name": "vault", "pattern": "VAULT-[0-9]{4}"}])
    key, _ = new_key(owner)
    seen = Caller(Client(), key).get("/account/settings")
    assert seen.status_code == 200
    assert "secretPatterns" not in seen.json()["data"] and "VAULT" not in seen.content.decode()
    assert seen.json()["data"]["secretsOnAutomatic"] == "refuse"


def test_a_vision_is_screened_like_a_note(owner):
    saved = services.vision_update(actor=owner, operation_id=op(), notebook_id=None,
                                   content=f"Ship it. Deploy key {KEY}.")
    assert saved.content == f"Ship it. Deploy key {MARKED}."
    assert stored_anywhere(owner, KEY) == []


def test_an_aws_secret_key_in_prose_keeps_neither_half(owner, embedder):
    """Issue 36 item 3.6: the secret half went in whole when it stood in a sentence."""
    secret = "wJalr" + "Qm7Tz2Kp9Xv/Lc4Rn8Bd+Hs6Fy1Gu3Ne5Wa"  # 40 characters
    saved = services.note_remember(
        actor=owner, operation_id=op(), kind="fact",
        content=f"The backup job uses key {KEY} with secret {secret} until June.")
    assert saved.redacted == {"aws-access-key": 1, "aws-secret-access-key": 1}
    assert saved.note.content == ("The backup job uses key [redacted: aws-access-key] with "
                                  "secret [redacted: aws-secret-access-key] until June.")
    index_all(owner)
    assert stored_anywhere(owner, secret) == [] and stored_anywhere(owner, KEY) == []
    assert all(secret not in text for text in embedder.seen)
