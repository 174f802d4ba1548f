"""Library search (SPEC §4): the website's search box and `POST /v1/notes/search`.

Keyword search with filters and sorts, paged by **signed cursors**: opaque, HMAC-signed
(Django's signing, keyed by the secret key), bound to the account, the connection, the
query + filters + sort, and a creation-time ceiling fixed by the first page — so paging
is stable under concurrent inserts (new notes wait for a new search; nothing older than
the ceiling is skipped or repeated). A tampered or foreign cursor is `Invalid`.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from django.contrib.postgres.search import SearchHeadline
from django.db import connection
from django.db.models import Exists, FloatField, OuterRef, Q, QuerySet
from django.db.models.expressions import RawSQL
from django.db.models.functions import Cast
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from grove.kernel.actor import READ, Actor
from grove.kernel.errors import Invalid
from grove.kernel.paging import caller_binding, cursor_after, cursor_read, keyset_page
from grove.kernel.schemas import ListMeta
from grove.kernel.tenancy import tenant
from grove.kernel.validation import storable_text
from notebooks.models import SEARCH_CONFIG, Kind, Note, Notebook, Status, TruthNote
from notebooks.rules import (
    EVERYWHERE,
    SEARCH_DEFAULT_LIMIT,
    SEARCH_LIFETIMES,
    SEARCH_MAX_LIMIT,
    SEARCH_QUERY_MAX_CHARS,
    SEARCH_RANK_MAX,
    SEARCH_SORTS,
    SEARCH_STATUSES,
    _Everywhere,
    clean_bool,
    clean_source_agent,
    clean_tag,
    past_expiry_filter,
    place_key,
)
from notebooks.schemas.notes import Matches, NoteOut, SearchItem, SearchPage
from notebooks.selectors.access import live_filter, notes_visible_to, resolve_scope
from notebooks.selectors.as_of import clean_as_of
from notebooks.selectors.as_of_reads import note_page_at
from notebooks.selectors.note_counts import live_note_count
from notebooks.selectors.search_passages import best_passage_text
from notebooks.selectors.search_terms import Matching, matching, plain_text
from notebooks.selectors.truth import scoped_truth
from notebooks.selectors.truth_marks import UNMARKED, active_profile, truth_marks

SEARCH_CURSOR_SALT = "grove.notes.search"

# Each sort as a total order (the id breaks ties), and the paging key is its fields.
_ORDERS: dict[str, tuple[str, str]] = {
    "relevance": ("-rank", "-id"), "updated_desc": ("-updated_at", "-id"),
    "updated_asc": ("updated_at", "id"), "created_desc": ("-created_at", "-id")}


def _clean(value: Any, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise Invalid(f"{what} must be one of {', '.join(allowed)}.", code=f"invalid_{what}")
    return str(value)


def _filters_fingerprint(spec: dict[str, Any]) -> str:
    canonical = json.dumps(spec, sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def _with_status(actor: Actor, *, status: str, now: datetime) -> QuerySet[Note]:
    if status == "active":
        return Note.objects.filter(live_filter(actor, now=now))
    visible = notes_visible_to(actor)
    if status == "archived":
        # Archived notebooks are few: naming them lets both arms use an index instead
        # of joining every active note to its notebook.
        in_archived = Notebook.objects.filter(account_id=actor.account_id,
                                              archived_at__isnull=False).values("id")
        return visible.filter(Q(status=Status.ARCHIVED)
                              | Q(status=Status.ACTIVE, notebook_id__in=in_archived))
    return visible.filter(past_expiry_filter(now=now))


def note_search(
    *,
    actor: Actor,
    query: str | None = None,
    notebook_id: uuid.UUID | str | None | _Everywhere = EVERYWHERE,
    kinds: Sequence[str] | None = None,
    source_agent: str | None = None,
    tag: str | None = None,
    pinned: bool | None = None,
    updated_after: datetime | str | None = None,
    lifetime: str | None = None,
    status: str = "active",
    sort: str | None = None,
    cursor: str | None = None,
    limit: int = SEARCH_DEFAULT_LIMIT,
    matches: bool = False,
    exact_count: bool = True,
    include_subnotebooks: bool = False,
    marks: bool = False,
    as_of: str | None = None,
) -> SearchPage:
    """One page of the caller's notes matching the query and filters. Read-only.

    The query is read as it is being typed (`search_terms`): the last word matches as a
    prefix unless a space follows it, and the words of a short query match variants
    and small typos.

    `notebook_id`: a notebook, None for Personal, omitted for everything granted.
    `include_subnotebooks`: with a notebook, the notes of its sub-notebooks too — those
    the caller is granted, reached through granted ones (`granted_subtree_ids`).
    `sort` defaults to relevance with a query, else updated_desc; a query too common to
    rank is shown newest first (`SearchPage.sort` says which). Without `exact_count`, the
    matches of such a query are not all counted (the website's "1,000+"):
    `meta.available` counts those among the first SEARCH_RANK_MAX + 1 the index found
    (`lower_bound`). `marks`: each item says what declared ground truth says of its note
    (`truth_marks`, held to the one notebook listed, if one). Raises Invalid
    (bad filters, tampered/foreign/mismatched cursor) and NotFound (notebook)."""
    typed = None
    if query is not None:
        if not isinstance(query, str) or len(query) > SEARCH_QUERY_MAX_CHARS:
            raise Invalid(f"query must be text of at most {SEARCH_QUERY_MAX_CHARS} characters.",
                          code="invalid_query")
        typed = storable_text(query, what="query", code="invalid_query")
        query = typed.strip() or None
    sort = _clean(sort or ("relevance" if query else "updated_desc"), SEARCH_SORTS, "sort")
    if sort == "relevance" and not query:
        raise Invalid("Sorting by relevance needs a query.", code="invalid_sort")
    status = _clean(status, SEARCH_STATUSES, "status")
    if lifetime is not None:
        lifetime = _clean(lifetime, SEARCH_LIFETIMES, "lifetime")
    if kinds is not None:
        kinds = [_clean(k, tuple(Kind.values), "kind") for k in kinds]
    if isinstance(updated_after, str):
        updated_after = parse_datetime(updated_after)
        if updated_after is None:
            raise Invalid("updatedAfter must be an ISO 8601 time with a zone.",
                          code="invalid_updated_after")
    if updated_after is not None:
        # In UTC: PostgreSQL refuses zone offsets beyond ±15:59 that ISO 8601 allows.
        try:
            if updated_after.tzinfo is None:
                raise ValueError("no zone")
            updated_after = updated_after.astimezone(UTC)
        except (OverflowError, ValueError):
            raise Invalid("updatedAfter must be an ISO 8601 time with a zone.",
                          code="invalid_updated_after") from None
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= SEARCH_MAX_LIMIT:
        raise Invalid(f"limit must be a whole number from 1 to {SEARCH_MAX_LIMIT}.",
                      code="invalid_limit")
    if source_agent is not None:
        source_agent = clean_source_agent(source_agent)
    if tag is not None:
        tag = clean_tag(tag)
    place = place_key(notebook_id)
    spec = {"q": query, "typing": bool(typed and not typed[-1].isspace()), "place": place,
            "kinds": kinds, "agent": source_agent, "tag": tag,
            "after": updated_after, "lifetime": lifetime, "status": status, "sort": sort}
    if include_subnotebooks and place not in (None, "*"):
        spec["sub"] = True  # only when set: cursors of a plain search stay as they were
    if pinned is not None:
        pinned = spec["pinned"] = clean_bool(pinned, what="pinned")
    at = clean_as_of(as_of, actor=actor)
    if at is not None:
        spec["asOf"] = at.asked  # the instant itself is the cursor's ceiling
    fingerprint = _filters_fingerprint(spec)
    opened = cursor_read(cursor, salt=SEARCH_CURSOR_SALT, binding=caller_binding(actor),
                         fingerprint=fingerprint)
    if at is not None:
        if opened.ceiling is not None:  # later pages: the instant of the first
            at = replace(at, instant=opened.ceiling)
        with tenant(actor):
            actor.require(READ)
            return note_page_at(
                actor=actor, at=at, opened=opened, salt=SEARCH_CURSOR_SALT,
                scope=resolve_scope(actor, notebook_id, subtree="sub" in spec), query=query,
                kinds=kinds, source_agent=source_agent, tag=tag, pinned=pinned,
                updated_after=updated_after, lifetime=lifetime, status=status, sort=sort,
                limit=limit, marks=marks)

    with tenant(actor):
        actor.require(READ)
        now = timezone.now()
        ceiling = opened.ceiling or now
        scope = resolve_scope(actor, notebook_id, subtree="sub" in spec)
        within = scope.place_q()  # the place, as a condition on notebook_id
        notes = _with_status(actor, status=status, now=now).filter(within,
                                                                    created_at__lte=ceiling)
        if kinds:
            notes = notes.filter(kind__in=kinds)
        if source_agent is not None:
            notes = notes.filter(source_agent=source_agent)
        if tag is not None:
            # The index lookup in a security-definer function, as for the query
            # (migration 0018); this query, under RLS, keeps what the caller may see.
            notes = notes.filter(id__in=RawSQL("SELECT grove_tagged(%s)", [tag]))
        if pinned is not None:
            notes = notes.filter(pinned=pinned)
        if updated_after is not None:
            notes = notes.filter(updated_at__gt=updated_after)
        if lifetime == "permanent":
            notes = notes.filter(retention_days__isnull=True)
        elif lifetime == "ephemeral":
            notes = notes.filter(retention_days__isnull=False)
        search_query: Any = None
        headline_config = SEARCH_CONFIG
        rank: Any = None
        matched_terms: Any = None
        order = sort
        probed: _Probed | None = None
        if query:
            how = matching(typed or query)
            if how is None:  # stop words only: nothing can match
                notes, order = notes.none(), "updated_desc" if sort == "relevance" else sort
            else:
                search_query, rank, matched_terms = how.query, how.rank, how.terms
                headline_config = how.headline_config
                notes, order, probed = _narrowed(notes, how, sort=sort, after=opened.key)
        lower_bound = probed is not None and probed.many and not exact_count
        if probed is not None and (lower_bound or not probed.many):
            # Counted with the index lookup: every match when they are few, else the
            # matches among the first ones the index found — a count that is at least
            # right, without reading every match.
            available = probed.listed
        elif status == "active" and not query and not (
                kinds or source_agent is not None or tag is not None
                or updated_after is not None or lifetime):
            # The live notes of a place: from the counts the writes keep, not by
            # counting every note (`note_counts`).
            available = live_note_count(actor, within=within, now=now, ceiling=ceiling)
        else:
            available = notes.count()

        if order == "relevance":
            assert rank is not None
            # float8, not ts_rank's float4: the cursor round-trips the value exactly.
            notes = notes.annotate(rank=Cast(rank, FloatField()))
        if matches and search_query is not None:
            # One passage of 15–35 words around the best match (fragment mode cut
            # short notes down to two words), of the note as text, not markdown — of
            # the passage the query ranks highest, so a long document's snippet is where
            # it matched, not its opening (a one-passage note: its whole text).
            notes = notes.annotate(
                headline=SearchHeadline(plain_text(best_passage_text(query or "")), search_query,
                                        config=headline_config, start_sel="«", stop_sel="»",
                                        max_fragments=0, max_words=35, min_words=15),
                matched_terms=matched_terms,
            )
        if actor.is_session:
            # The library's badge on declared ground truth (the owner's view: which
            # declaration names a note is not a connection's business).
            notes = notes.annotate(declared=Exists(TruthNote.objects.filter(
                note_id=OuterRef("id"))))
        # Nothing counted, nothing to page: skip the ordered scan (with a rare filter the
        # planner may walk the whole order index before finding that out).
        page = keyset_page(notes if available or lower_bound else notes.none(),
                           order=_ORDERS[order],
                           after=opened.key, limit=limit)
        rows = page.rows
        # The truth this list is held to: its one notebook's, when it lists one.
        marked = truth_marks(rows, scoped_truth(scope),
                             profile=active_profile()) if marks else {}
        items = []
        for note in rows:
            evidence = None
            if matches and query is not None and search_query is not None:
                evidence = Matches(query=query, note_version=note.version,
                                   terms=sorted(getattr(note, "matched_terms", None) or []),
                                   snippet=getattr(note, "headline", ""))
            said = marked.get(note.id, UNMARKED)
            items.append(SearchItem(note=NoteOut.of(note), matches=evidence,
                                    declared=getattr(note, "declared", False),
                                    authority=said.authority,
                                    known_false=list(said.known_false)))
        next_cursor = cursor_after(opened, page, ceiling=ceiling, salt=SEARCH_CURSOR_SALT)
        if lower_bound:  # what this page found is known to match too
            available = max(available, len(items) + (1 if next_cursor else 0))
        # Counted before paging: notes before this page are included, so "truncated"
        # means "there is more than this page".
        return SearchPage(data=items, sort=order, lower_bound=lower_bound, meta=ListMeta.of(
            returned=len(items), available=available, limit=limit, next_cursor=next_cursor))


@dataclass(frozen=True)
class _Probed:
    """What the bounded index lookup of a query found: whether its matches are too many
    to rank (more than SEARCH_RANK_MAX), and how many of those it found the list's
    notes include — all of the matches when they are not too many (an exact count)."""

    many: bool
    listed: int


def _narrowed(notes: QuerySet[Note], how: Matching, *, sort: str,
              after: tuple[Any, ...] | None,
              ) -> tuple[QuerySet[Note], str, _Probed | None]:
    """`notes` narrowed to the matches of the query: (notes, the order the page takes,
    and what the index lookup found, when one was made — `_Probed`).

    A query most notes match ("cell", the first letter of a word being typed) would
    cost time in proportion to its matches: each looked up, checked against the grant,
    ranked. So the account's first SEARCH_RANK_MAX + 1 matches are asked for (a bounded
    index scan); when there are more, the notes are walked in the page's order instead,
    each checked against the query as it comes (matches are dense, so a page is found
    soon), and relevance gives way to newest first — the order is chosen on the first
    page and kept by the cursor (a relevance key starts with a number, a newest-first
    key with a time)."""
    if sort == "relevance" and after is not None:
        if not isinstance(after[0], datetime):
            return notes.filter(id__in=how.ids()), sort, None
        return notes.filter(how.hit()), "updated_desc", _Probed(many=True, listed=0)
    first, listed = _probe(notes, how)
    if len(first) <= SEARCH_RANK_MAX:
        return notes.filter(id__in=first), sort, _Probed(many=False, listed=listed)
    return (notes.filter(how.hit()), "updated_desc" if sort == "relevance" else sort,
            _Probed(many=True, listed=listed))


def _probe(notes: QuerySet[Note], how: Matching) -> tuple[list[uuid.UUID], int]:
    """The account's first SEARCH_RANK_MAX + 1 matches (the index lookup) and how many of
    them `notes` includes, in one statement: the ids match already, so counting them
    only checks the list's other conditions (grant, status, filters) — one snapshot,
    one round trip."""
    probe = how.ids(SEARCH_RANK_MAX + 1)
    listed = notes.filter(id__in=RawSQL("SELECT id FROM grove_probe", ())).values("id")
    listed_sql, listed_params = listed.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH grove_probe(id) AS MATERIALIZED ({probe.sql})"  # noqa: S608 - compiled SQL
            f" SELECT ARRAY(SELECT id FROM grove_probe),"
            f" (SELECT count(*) FROM ({listed_sql}) listed)",
            [*probe.params, *listed_params])
        first, count = cursor.fetchone()
    return list(first), int(count)
