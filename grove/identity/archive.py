"""Move an account between Grove instances without losing anything (issue 22 item 4):
`grove export --archive` / `grove import --archive` and Settings.

The archive is NDJSON, one object per line:

    {"type": "grove-archive", "format": 1, "exportedAt": …, "tables": [...]}
    {"type": "account", "timeZone": …, "secretsOnIngest": …, …}
    {"type": "row", "table": "notebooks_note", "row": {…every column…}}   (table by table)
    {"type": "end", "rows": {"notebooks_note": 812, …}}

Every table a feature app registered (`grove.kernel.archive`) is in it, whole: notebooks
and notes in any state (the trash included), every revision, visions and their history,
ground-truth declarations, negative claims, held changes, the ingest ledger,
conversations with their turns (citations, selectors) and proposals, share links. It is
read in one REPEATABLE READ transaction, so it is one moment of the account.

Import goes into an account with no notebooks or notes yet (a fresh Grove, or a new
account), in one transaction — all or nothing: a truncated file (no `end`, or counts
that differ), a row that does not decode, or a reference to a row the archive does not
hold changes nothing. Ids are new and mapped consistently; embeddings are rebuilt by the
importing instance's model (notes are queued for embedding; negative claims' vectors
are made after the commit), so a different embedding model needs no re-ingest. Share
links are revoked on import unless `keep_shares` (their tokens are derived from the new
ids and the new server's secret, so links change either way). Connections (API keys,
OAuth clients) come as revoked records with no key — who saved what stays known, but
credentials stay with the instance that issued them: connect agents again there.

A reference must name a row of its target table that came earlier in the archive
(`Remap.known`), so a crafted archive can make no cycle and point at nothing outside
itself; a held change may only carry the fields a write holds. What stays stale: an
Ask proposal's fingerprint of notebooks is a digest over their ids, so an open proposal
that covers notebooks answers `proposal_stale` on the new instance (ask again there);
proposals over notes alone carry on.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db import DatabaseError, connection, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from grove.identity.hygiene import clean_secret_action, clean_secret_patterns
from grove.kernel import archive
from grove.kernel.actor import Actor
from grove.kernel.errors import Conflict, Invalid
from grove.kernel.tenancy import tenant
from grove.kernel.validation import clean_time_zone
from grove.models import Account

FORMAT = 1
MARKER = "grove-archive"
BATCH = 1000
ACCOUNT_FIELDS = {"timeZone": "time_zone", "secretsOnIngest": "secrets_on_ingest",
                  "secretsOnAutomatic": "secrets_on_automatic",
                  "secretsOnExplicit": "secrets_on_explicit",
                  "secretPatterns": "secret_patterns", "capturePausedAt": "capture_paused_at"}


@dataclass
class ArchiveImportOut:
    rows: dict[str, int] = field(default_factory=dict)  # by table
    ids: dict[str, uuid.UUID] = field(default_factory=dict)  # old id → new id


def account_archive(*, actor: Actor) -> Iterator[dict[str, Any]]:
    """The account's archive records (see the module's docstring); website owner only.
    Consume it whole: it holds one read-only transaction open until the end."""
    actor.require_session()
    tables = archive.TABLES
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost:  # one moment of the account, however long the reading takes
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        with tenant(actor):
            account = Account.objects.get(id=actor.account_id)
            yield {"type": MARKER, "format": FORMAT,
                   "exportedAt": timezone.now().isoformat(),
                   "tables": [table.table for table in tables]}
            yield {"type": "account", **{
                wire: archive.to_json(getattr(account, name))
                for wire, name in ACCOUNT_FIELDS.items()}}
            counts: dict[str, int] = {}
            for table in tables:
                counts[table.table] = 0
                for row in archive.rows_of(table, actor.account_id):
                    counts[table.table] += 1
                    yield {"type": "row", "table": table.table,
                           "row": archive.encode(table, row)}
            yield {"type": "end", "rows": counts}


def archive_records(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """NDJSON lines as records; a line that is not a JSON object is `invalid_archive`."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            raise Invalid(f"Line {number} is not JSON.", code="invalid_archive") from None
        if not isinstance(record, dict):
            raise Invalid(f"Line {number} is not a JSON object.", code="invalid_archive")
        yield record


def _require_empty(actor: Actor) -> None:
    """Nothing an archive brings may be there already (its API keys aside): the account
    row is locked first, so two imports into one account cannot both pass."""
    Account.objects.select_for_update().get(id=actor.account_id)
    for table in archive.TABLES:
        if table.model == "grove.Connection":
            continue
        if table.model_class._default_manager.filter(account_id=actor.account_id).exists():
            raise Conflict("An archive goes into an account with no notebooks, notes, "
                           "visions or conversations yet (a fresh Grove, or a new "
                           "account); this one has some.", code="account_not_empty")


def _apply_account(actor: Actor, record: dict[str, Any]) -> None:
    account = Account.objects.select_for_update().get(id=actor.account_id)
    try:
        account.time_zone = clean_time_zone(str(record.get("timeZone") or "UTC")).key
        for wire in ("secretsOnIngest", "secretsOnAutomatic", "secretsOnExplicit"):
            setattr(account, ACCOUNT_FIELDS[wire],
                    clean_secret_action(record.get(wire), what=wire))
        account.secret_patterns = clean_secret_patterns(record.get("secretPatterns") or [])
    except Invalid as exc:
        raise Invalid(f"The archive's account settings are not valid: {exc.message}",
                      code="invalid_archive") from None
    paused = record.get("capturePausedAt")
    try:
        account.capture_paused_at = parse_datetime(paused) if isinstance(paused, str) \
            else None
    except ValueError:
        raise Invalid("The archive's account settings are not valid: capturePausedAt.",
                      code="invalid_archive") from None
    account.save(update_fields=list(ACCOUNT_FIELDS.values()))


def account_archive_import(*, actor: Actor, records: Iterable[dict[str, Any]],
                           keep_shares: bool = False) -> ArchiveImportOut:
    """Load an archive into this account (see the module's docstring); website owner
    only. Raises Invalid (`invalid_archive`) or Conflict (`account_not_empty`), having
    changed nothing."""
    actor.require_session()
    stream = iter(records)
    header = next(stream, None)
    if not header or header.get("type") != MARKER or header.get("format") != FORMAT:
        raise Invalid("This is not a Grove archive (format 1): its first line should be "
                      '{"type": "grove-archive", "format": 1, …}.', code="invalid_archive")
    tables, remap, out = archive.by_table(), archive.Remap(), ArchiveImportOut()
    options = {"keep_shares": bool(keep_shares)}
    ended = False
    try:
        with tenant(actor):
            _require_empty(actor)
            batch: list[Any] = []
            current: archive.Archived | None = None
            for record in stream:
                kind = record.get("type")
                if ended:
                    raise Invalid("The archive goes on after its end.", code="invalid_archive")
                if kind == "account":
                    _apply_account(actor, record)
                elif kind == "row":
                    name = record.get("table")
                    table = tables.get(name) if isinstance(name, str) else None
                    if table is None or not isinstance(record.get("row"), dict):
                        raise Invalid(f"Unknown table {str(name)[:60]!r}.",
                                      code="invalid_archive")
                    if table is not current or len(batch) >= BATCH:
                        _flush(current, batch, options, out)
                        batch, current = [], table
                    batch.append(archive.decode(table, record["row"],
                                                account_id=actor.account_id, remap=remap))
                elif kind == "end":
                    _flush(current, batch, options, out)
                    batch, ended = [], True
                    stated = record.get("rows")
                    if not isinstance(stated, dict) or {t: n for t, n in stated.items() if n} \
                            != {t: n for t, n in out.rows.items() if n}:
                        raise Invalid("The archive's row counts do not match its rows: it "
                                      "is damaged.", code="invalid_archive")
                else:
                    raise Invalid(f"Unknown record type {str(kind)[:40]!r}.",
                                  code="invalid_archive")
            if not ended:
                raise Invalid("The archive ends early (no end record): it was cut short.",
                              code="invalid_archive")
    except DatabaseError as exc:
        # The first line only: the detail lines quote the refused row.
        raise Invalid(f"The archive's rows do not fit together: {exc}".splitlines()[0],
                      code="invalid_archive") from None
    out.ids = dict(remap.ids)
    return out


def connections_imported(rows: list[Any], options: dict[str, Any]) -> None:
    """Connections arrive revoked, with no key: the record of which agent saved what,
    never a way in (keys and OAuth clients belong to the instance that issued them)."""
    from grove.models import Connection

    now = timezone.now()
    Connection.objects.filter(id__in=[row.id for row in rows], revoked_at__isnull=True) \
        .update(status=Connection.Status.REVOKED, revoked_at=now)


def _flush(table: archive.Archived | None, rows: list[Any], options: dict[str, Any],
           out: ArchiveImportOut) -> None:
    if table is None or not rows:
        return
    model = table.model_class
    stamped = [f.attname for f in model._meta.concrete_fields
               if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False)]
    kept = [{name: getattr(row, name) for name in stamped} for row in rows]
    model._default_manager.bulk_create(rows)
    for row, values in zip(rows, kept, strict=True):  # bulk_create stamps them "now"
        if values:
            model._default_manager.filter(pk=row.pk).update(**values)
            for name, value in values.items():
                setattr(row, name, value)
    out.rows[table.table] = out.rows.get(table.table, 0) + len(rows)
    if table.imported is not None:
        table.imported(rows, options)
