"""The lossless account archive's table registry and row codec (issue 22 item 4).

Feature apps register the tables an account moves with (`register`), in an order where
every table comes after the tables it points at; core imports no feature app. Each row
is every concrete column of the model, as JSON, except:

* generated columns, and the ones a table declares `derived` (rebuilt on import: a
  note's content hash, stated dates and indexing state, a negative claim's vector);
* `account_id` (the importing account's) and a `BigAutoField` id (a new one is taken).

On import every UUID is new and mapped consistently (`Remap`): primary keys, foreign
keys, other UUID columns (a turn's client id, a revision's operation id) and any
UUID written inside a JSON column (a citation's `note:<uuid>@3`, a proposal's
fingerprint) — so references between the imported rows hold, and an archive imported
twice makes two independent copies. Note text is moved verbatim.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from django.apps import apps
from django.contrib.postgres.fields import ArrayField
from django.db import models

from grove.kernel.errors import Invalid

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass(frozen=True)
class Archived:
    """One table that moves with an account.

    model: "app_label.Model". derived: columns rebuilt on import instead of moved.
    order: how to read the rows (a table whose rows point at each other, such as
        notebooks' parents, reads its rows so that a row comes after the one it
        points at). imported(rows, options): after the rows are inserted, in the
        import's transaction (notes: queue their embedding; shares: revoke).
    """

    model: str
    derived: tuple[str, ...] = ()
    order: Callable[[Any], Iterable[Any]] | None = None
    imported: Callable[[list[Any], dict[str, Any]], None] | None = None

    @property
    def model_class(self) -> type[models.Model]:
        return apps.get_model(self.model)

    @property
    def table(self) -> str:
        return self.model_class._meta.db_table


TABLES: list[Archived] = []


def register(*tables: Archived) -> None:
    for table in tables:
        if table.model not in {t.model for t in TABLES}:
            TABLES.append(table)


def by_table() -> dict[str, Archived]:
    return {table.table: table for table in TABLES}


def _moved_fields(table: Archived) -> list[models.Field[Any, Any]]:
    moved = []
    for f in table.model_class._meta.concrete_fields:
        if getattr(f, "generated", False) or f.name in table.derived or f.name == "account":
            continue
        if isinstance(f, models.BigAutoField):
            continue
        moved.append(f)
    return moved


def to_json(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def encode(table: Archived, row: models.Model) -> dict[str, Any]:
    """A row as the archive holds it (see the module's docstring)."""
    encoded = {}
    for f in _moved_fields(table):
        value = getattr(row, f.attname)
        encoded[f.attname] = [to_json(item) for item in value] if isinstance(value, list) \
            else to_json(value)
    return encoded


@dataclass
class Remap:
    """Old UUID → new UUID, for everything the import has seen so far, and which old
    ids are rows already imported, by model: a reference must name a row of its target
    table that came earlier in the archive (so no cycle, no row of another account, no
    id that only appeared in passing)."""

    ids: dict[str, uuid.UUID] = field(default_factory=dict)
    rows: dict[str, set[str]] = field(default_factory=dict)

    def new(self, old: Any) -> uuid.UUID:
        key = str(old)
        if key not in self.ids:
            self.ids[key] = uuid.uuid4()
        return self.ids[key]

    def known(self, old: Any, *, model: str, what: str) -> uuid.UUID:
        key = str(old)
        if key not in self.rows.get(model, ()):
            raise Invalid(f"The archive refers to a {what} it does not hold before the "
                          f"reference ({key[:40]}).", code="invalid_archive")
        return self.ids[key]

    def within(self, value: Any) -> Any:
        """A JSON value with every UUID the import has mapped replaced by its new one."""
        if isinstance(value, str):
            return _UUID.sub(lambda m: str(self.ids.get(m.group(0), m.group(0))), value)
        if isinstance(value, list):
            return [self.within(item) for item in value]
        if isinstance(value, dict):
            return {self.within(k): self.within(v) for k, v in value.items()}
        return value


def decode(table: Archived, data: dict[str, Any], *, account_id: uuid.UUID,
           remap: Remap) -> models.Model:
    """A new row (not saved) from an archive row: ids remapped, the account set."""
    model = table.model_class
    values: dict[str, Any] = {"account_id": account_id}
    for f in _moved_fields(table):
        if f.attname not in data:
            if f.has_default() or f.null:
                continue
            raise Invalid(f"A {model._meta.verbose_name} row lacks {f.attname}.",
                          code="invalid_archive")
        raw = data[f.attname]
        try:
            if f.primary_key:
                values[f.attname] = remap.new(raw)
            elif f.is_relation:
                target = f.related_model
                assert target is not None
                values[f.attname] = None if raw is None else remap.known(
                    raw, model=target._meta.label, what=str(target._meta.verbose_name))
            elif isinstance(f, models.UUIDField):
                values[f.attname] = None if raw is None else remap.new(raw)
            elif isinstance(f, models.JSONField):
                values[f.attname] = remap.within(raw)
            elif isinstance(f, ArrayField) and isinstance(f.base_field, models.UUIDField):
                values[f.attname] = [remap.new(item) for item in raw]  # a grant's notebooks
            else:
                values[f.attname] = None if raw is None else f.to_python(raw)
        except Invalid:
            raise
        except Exception as exc:  # noqa: BLE001 - any malformed value is the archive's fault
            raise Invalid(f"A {model._meta.verbose_name} row's {f.attname} is not valid "
                          f"({exc.__class__.__name__}).", code="invalid_archive") from None
    pk = model._meta.pk
    if pk is not None and isinstance(pk, models.UUIDField) and pk.attname in data:
        remap.rows.setdefault(model._meta.label, set()).add(str(data[pk.attname]))
    return model(**values)


def rows_of(table: Archived, account_id: uuid.UUID) -> Iterator[models.Model]:
    """The account's rows of a table, in the table's order (caller: a tenant
    transaction)."""
    query = table.model_class._default_manager.filter(account_id=account_id)
    if table.order is not None:
        yield from table.order(query)
        return
    pk = table.model_class._meta.pk
    yield from query.order_by(pk.name if pk is not None else "id").iterator(chunk_size=1000)
