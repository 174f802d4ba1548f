"""Writes of links: a note's links and names kept in step with its text, and links
resolved again when the notes answering to a name change (docs/architecture.md, "Links
between notes"). Callers hold the account's tenant transaction (or, in a migration, the
owner's); nothing here checks a grant — the note services did. Every statement names
the account as well, so the rows are the account's even where row-level security is
not forced."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from django.db import DEFAULT_DB_ALIAS, connections

from links.parsing import Found, extract, names
from links.rules import Candidate, Folder, Wanted, choose, folder_of, name_key, wanted


@dataclass(frozen=True)
class NoteText:
    """A note as links know it."""

    id: uuid.UUID
    notebook_id: uuid.UUID | None
    content: str
    source_path: str = ""


def links_sync(account_id: uuid.UUID, notes: Sequence[NoteText], *,
               placed: bool = False) -> int:
    """Make the notes' links and names those of their texts, resolve their links, and
    resolve again every link of the account asking for a name the notes gained or lost.
    `placed`: the notes' places changed (where a link starts from), so every link of
    theirs is resolved again. Returns how many links the notes write."""
    if not notes:
        return 0
    ids = [note.id for note in notes]
    old = _names_of(account_id, ids)
    new: dict[uuid.UUID, dict[str, str]] = {}
    for note in notes:
        keyed: dict[str, str] = {}
        for name, kind in names(note.content, note.source_path).items():
            keyed.setdefault(name_key(name), kind)
        new[note.id] = {key: kind for key, kind in keyed.items() if key}
    changed = {note_id for note_id in ids if old.get(note_id, {}) != new[note_id]}
    touched: set[str] = set()
    if changed:
        with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
            cursor.execute("DELETE FROM links_linkname WHERE account_id = %s AND note_id = ANY(%s)",
                           [account_id, list(changed)])
            rows = [(account_id, note_id, key, kind) for note_id in changed
                    for key, kind in new[note_id].items()]
            if rows:
                cursor.executemany("INSERT INTO links_linkname (account_id, note_id, key, kind) "
                                   "VALUES (%s, %s, %s, %s)", rows)
        for note_id in changed:
            before, after = set(old.get(note_id, {}).items()), set(new[note_id].items())
            touched |= {key for key, _ in before ^ after}
    written = _rewrite(account_id, notes, placed)
    if touched:
        resolve_keys(account_id, touched)
    return written


def _names_of(account_id: uuid.UUID, ids: list[uuid.UUID]) -> dict[uuid.UUID, dict[str, str]]:
    out: dict[uuid.UUID, dict[str, str]] = defaultdict(dict)
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT note_id, key, kind FROM links_linkname "
                       "WHERE account_id = %s AND note_id = ANY(%s)", [account_id, ids])
        for note_id, key, kind in cursor.fetchall():
            out[note_id][key] = kind
    return out


Ask = tuple[Found, Wanted | None]
Shape = tuple[str, str, str, str, str, str, bool]


def _shape(link: Found, want: Wanted | None) -> Shape:
    """What a stored link says, its place in the text aside."""
    w = link.written
    return (w.form, w.target, w.heading, w.label, want.key if want else "",
            "/".join(want.folders) if want else "", bool(want and want.whole))


@dataclass(frozen=True)
class _Row:
    id: int
    position: int
    start: int
    end: int
    shape: Shape


# Kept rows move to their new positions through this offset, so no two rows of a note
# ever hold one position (`link_position_once` is checked row by row).
_SHIFT = 1_000_000


def _stored(account_id: uuid.UUID, ids: list[uuid.UUID]) -> dict[uuid.UUID, list[_Row]]:
    out: dict[uuid.UUID, list[_Row]] = defaultdict(list)
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(
            'SELECT note_id, id, position, start, "end", form, target, heading, label, key, '
            "folders, whole FROM links_link WHERE account_id = %s AND note_id = ANY(%s) "
            "ORDER BY note_id, position", [account_id, ids])
        for note_id, link_id, position, start, end, *shape in cursor.fetchall():
            out[note_id].append(_Row(link_id, position, start, end, tuple(shape)))
    return out


# Past this many changed links on either side, they are all written anew rather than
# matched (`SequenceMatcher` is quadratic in them).
MATCH_MAX = 200


def _matched(old: list[Shape], new: list[Shape]) -> list[tuple[str, int, int, int, int]]:
    """`difflib`'s opcodes from the stored links to the new ones — the unchanged head
    and tail taken as equal first, so an edit among thousands of links matches only
    what changed."""
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    ops: list[tuple[str, int, int, int, int]] = [("equal", 0, head, 0, head)] if head else []
    middle_old, middle_new = old[head:len(old) - tail], new[head:len(new) - tail]
    if len(middle_old) > MATCH_MAX or len(middle_new) > MATCH_MAX:
        ops.append(("replace", head, len(old) - tail, head, len(new) - tail))
    else:
        matcher = SequenceMatcher(None, middle_old, middle_new, autojunk=False)
        ops += [(tag, i1 + head, i2 + head, j1 + head, j2 + head)
                for tag, i1, i2, j1, j2 in matcher.get_opcodes()]
    if tail:
        ops.append(("equal", len(old) - tail, len(old), len(new) - tail, len(new)))
    return ops


def _rewrite(account_id: uuid.UUID, notes: Sequence[NoteText], placed: bool) -> int:
    """The notes' links as their texts write them now. Stored links that still say
    what they said (`difflib` matches the old sequence to the new) keep their rows and
    their resolution — only their places in the text follow; a link is resolved again
    when the notes answering to its name change (`resolve_keys`). The rest are
    deleted, and the new ones written and resolved. Saving a note of many links where
    one changed therefore resolves one link, not all (bench/links.py). `placed`: every
    link is written anew (where the note sits changed what they reach)."""
    stored = _stored(account_id, [note.id for note in notes])
    tree = Places(account_id)
    fresh: list[tuple[NoteText, list[Ask], Folder]] = []
    gone: list[int] = []
    kept: list[tuple[int, int, int, int]] = []  # id, position, start, end
    shifted: list[int] = []  # of them, the rows whose position changes
    total = 0
    for note in notes:
        links = extract(note.content)
        old = stored.get(note.id, [])
        total += len(links)
        if not links and not old:
            continue
        here = tree.folder(note.notebook_id, note.source_path)
        asks: list[Ask] = [(link, wanted(link.written, here)) for link in links]
        if placed:
            gone += [row.id for row in old]
            fresh.append((note, asks, here))
            continue
        added: list[Ask] = []
        for tag, i1, i2, j1, j2 in _matched([row.shape for row in old],
                                            [_shape(link, want) for link, want in asks]):
            if tag != "equal":
                gone += [row.id for row in old[i1:i2]]
                added += asks[j1:j2]
                continue
            for row, (link, _) in zip(old[i1:i2], asks[j1:j2], strict=True):
                if (row.position, row.start, row.end) != (link.position, link.start, link.end):
                    kept.append((row.id, link.position, link.start, link.end))
                    if row.position != link.position:
                        shifted.append(row.id)
        if added:
            fresh.append((note, added, here))
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        if gone:
            cursor.execute("DELETE FROM links_link WHERE account_id = %s AND id = ANY(%s)",
                           [account_id, gone])
        if shifted:
            cursor.execute("UPDATE links_link SET position = position + %s WHERE "
                           "account_id = %s AND id = ANY(%s)", [_SHIFT, account_id, shifted])
        if kept:
            cursor.execute(
                'UPDATE links_link AS l SET position = m.position, start = m.start, "end" = '
                "m.stop FROM unnest(%s::bigint[], %s::int[], %s::int[], %s::int[]) AS "
                "m(id, position, start, stop) WHERE l.id = m.id AND l.account_id = %s",
                [*[list(column) for column in zip(*kept, strict=True)], account_id])
    _insert(account_id, fresh, tree)
    return total


def _write(account_id: uuid.UUID, notes: Sequence[NoteText],
           using: str = DEFAULT_DB_ALIAS) -> int:
    """Insert the links of notes that have none, each resolved as it goes in."""
    tree = Places(account_id, using)
    fresh = []
    for note in notes:
        links = extract(note.content)
        if links:
            here = tree.folder(note.notebook_id, note.source_path)
            fresh.append((note, [(link, wanted(link.written, here)) for link in links], here))
    return _insert(account_id, fresh, tree, using)


def _insert(account_id: uuid.UUID, fresh: list[tuple[NoteText, list[Ask], Folder]],
            tree: Places, using: str = DEFAULT_DB_ALIAS) -> int:
    """Insert links, each resolved against the notes answering to its name (one
    statement for them all)."""
    if not fresh:
        return 0
    pool = candidates(account_id, {want.key for _, asks, _ in fresh for _, want in asks if want},
                      tree, using)
    rows: list[tuple[object, ...]] = []
    for note, asks, here in fresh:
        for link, want in asks:
            target = choose(want, here, pool.get(want.key, ())) if want else None
            rows.append((note.id, link.position, link.start, link.end, *_shape(link, want),
                         target))
    columns = list(zip(*rows, strict=True))
    with connections[using].cursor() as cursor:
        cursor.execute(
            'INSERT INTO links_link (account_id, note_id, position, start, "end", form, '
            "target, heading, label, key, folders, whole, target_note_id) "
            "SELECT %s, * FROM unnest(%s::uuid[], %s::int[], %s::int[], %s::int[], "
            "%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], "
            "%s::bool[], %s::uuid[])", [account_id, *[list(c) for c in columns]])
    return len(rows)


def resolve_keys(account_id: uuid.UUID, keys: Iterable[str]) -> int:
    """Resolve again every link of the account that asks for one of `keys` (the notes
    answering to them changed); returns how many now point elsewhere."""
    keys = sorted(set(keys))
    if not keys:
        return 0
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(
            "SELECT l.id, l.key, l.folders, l.whole, l.target_note_id, n.notebook_id, "
            "n.source_path FROM links_link l JOIN notebooks_note n ON n.id = l.note_id "
            "WHERE l.account_id = %s AND l.key = ANY(%s)", [account_id, keys])
        links = cursor.fetchall()
    if not links:
        return 0
    tree = Places(account_id)
    pool = candidates(account_id, keys, tree)
    moves = []
    for link_id, key, folders, whole, current, notebook_id, source_path in links:
        want = Wanted(key, tuple(folders.split("/")) if folders else (), whole)
        target = choose(want, tree.folder(notebook_id, source_path), pool.get(key, ()))
        if target != current:
            moves.append((link_id, target))
    if moves:
        with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
            cursor.execute(
                "UPDATE links_link AS l SET target_note_id = m.target FROM "
                "unnest(%s::bigint[], %s::uuid[]) AS m(id, target) WHERE l.id = m.id",
                [[m[0] for m in moves], [m[1] for m in moves]])
    return len(moves)


def targets_changed(account_id: uuid.UUID, note_ids: Iterable[uuid.UUID]) -> int:
    """After notes were deleted, restored or moved: resolve again the links asking for
    any of their names."""
    ids = list(note_ids)
    if not ids:
        return 0
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT DISTINCT key FROM links_linkname "
                       "WHERE account_id = %s AND note_id = ANY(%s)", [account_id, ids])
        keys = [row[0] for row in cursor.fetchall()]
    return resolve_keys(account_id, keys)


class Places:
    """The account's notebooks as folders (read once, when first needed)."""

    def __init__(self, account_id: uuid.UUID, using: str = DEFAULT_DB_ALIAS) -> None:
        self.account_id, self.using = account_id, using
        self._names: dict[uuid.UUID, tuple[str, ...]] | None = None
        self._keys: dict[uuid.UUID | None, Folder] = {}

    def names(self, notebook_id: uuid.UUID | None) -> tuple[str, ...]:
        """The notebook's path of names as written, outermost first (Personal: none)."""
        if notebook_id is None:
            return ()
        if self._names is None:
            with connections[self.using].cursor() as cursor:
                cursor.execute("SELECT id, name, parent_id FROM notebooks_notebook "
                               "WHERE account_id = %s", [self.account_id])
                rows = {row[0]: (row[1], row[2]) for row in cursor.fetchall()}
            self._names = {}
            for notebook in rows:
                parts, at, seen = [], notebook, set()
                while at in rows and at not in seen:
                    seen.add(at)
                    parts.append(rows[at][0])
                    at = rows[at][1]
                self._names[notebook] = tuple(reversed(parts))
        return self._names.get(notebook_id, ())

    def path(self, notebook_id: uuid.UUID | None) -> Folder:
        """The notebook's path as keys (`name_key`)."""
        if notebook_id not in self._keys:
            self._keys[notebook_id] = tuple(name_key(name) for name in self.names(notebook_id))
        return self._keys[notebook_id]

    def folder(self, notebook_id: uuid.UUID | None, source_path: str) -> Folder:
        return folder_of(self.path(notebook_id), source_path)

    def written_folder(self, notebook_id: uuid.UUID | None, source_path: str) -> tuple[str, ...]:
        """`folder` as its names are written (for a link written to reach it)."""
        names = self.names(notebook_id)
        keys = self.path(notebook_id)
        folders = source_path.replace("\\", "/").split("/")[:-1] if source_path else []
        folders = [part for part in folders if part.strip() not in ("", ".")]
        if folders and folder_of(keys, source_path) == keys:
            return names
        return names + tuple(folders)


def candidates(account_id: uuid.UUID, keys: Iterable[str], tree: Places,
               using: str = DEFAULT_DB_ALIAS) -> dict[str, list[Candidate]]:
    """Per key, the account's notes (not deleted) answering to it."""
    keys = list(keys)
    pool: dict[str, list[Candidate]] = defaultdict(list)
    if not keys:
        return pool
    with connections[using].cursor() as cursor:
        cursor.execute(
            "SELECT k.key, k.kind, n.id, n.notebook_id, n.source_path, n.created_at "
            "FROM links_linkname k JOIN notebooks_note n ON n.id = k.note_id "
            "WHERE k.account_id = %s AND k.key = ANY(%s) AND n.status <> 'deleted'",
            [account_id, keys])
        for key, kind, note_id, notebook_id, source_path, created_at in cursor.fetchall():
            pool[key].append(Candidate(note_id, kind, tree.folder(notebook_id, source_path),
                                       created_at))
    return pool


def links_backfill(account_id: uuid.UUID, notes: Sequence[NoteText], using: str) -> int:
    """Names and links of notes that have none yet (migration `links 0002`, on the
    migration's own connection, `using`): every name first, so each link is resolved
    once, against all of them."""
    rows = [(account_id, note.id, key, kind) for note in notes
            for key, kind in {name_key(name): kind for name, kind
                              in reversed(names(note.content, note.source_path).items())}.items()
            if key]
    with connections[using].cursor() as cursor:
        if rows:
            cursor.executemany("INSERT INTO links_linkname (account_id, note_id, key, kind) "
                               "VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING", rows)
    return _write(account_id, notes, using)


@dataclass(frozen=True)
class Asking:
    """A link written in another note that means a given note by one of its names:
    where it is written and what it says."""

    link_id: int
    note_id: uuid.UUID
    start: int
    end: int
    form: str
    target: str
    heading: str
    label: str


def asking_for(account_id: uuid.UUID, note: NoteText, key: str,
               created_at: object) -> list[Asking]:
    """The links of other notes that ask for the name `key` and would reach `note` if it
    answered to it (by the nearest rule, among the notes that answer to it now) — after
    a rename, the links that meant the note by its old title."""
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(
            'SELECT l.id, l.note_id, l.start, l."end", l.form, l.target, l.heading, '
            "l.label, l.folders, l.whole, n.notebook_id, n.source_path "
            "FROM links_link l JOIN notebooks_note n ON n.id = l.note_id "
            "WHERE l.account_id = %s AND l.key = %s AND l.note_id <> %s "
            "ORDER BY l.note_id, l.position", [account_id, key, note.id])
        rows = cursor.fetchall()
    if not rows:
        return []
    tree = Places(account_id)
    pool = [c for c in candidates(account_id, [key], tree).get(key, []) if c.note_id != note.id]
    pool.append(Candidate(note.id, "title", tree.folder(note.notebook_id, note.source_path),
                          created_at))  # type: ignore[arg-type]
    found = []
    for (link_id, note_id, start, end, form, target, heading, label, folders, whole,
         notebook_id, source_path) in rows:
        want = Wanted(key, tuple(folders.split("/")) if folders else (), whole)
        if choose(want, tree.folder(notebook_id, source_path), pool) == note.id:
            found.append(Asking(link_id, note_id, start, end, form, target, heading, label))
    return found


def links_to(account_id: uuid.UUID, note_ids: Iterable[uuid.UUID]) -> dict[int, uuid.UUID]:
    """The links that reach the notes now: link id → the note it reaches (read before a
    move, to find the links the move leaves behind: `lost_links`)."""
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT id, target_note_id FROM links_link "
                       "WHERE account_id = %s AND target_note_id = ANY(%s)",
                       [account_id, list(note_ids)])
        return dict(cursor.fetchall())


@dataclass(frozen=True)
class Lost:
    """A link that reached a note and no longer does (the note moved): where it is
    written, what it says and where its note sits."""

    asking: Asking
    reached: uuid.UUID  # the note it reached before
    here: Folder  # where the note it is written in sits (keys)
    written_here: tuple[str, ...]  # the same, as the names are written
    path: Folder | None  # a Markdown link's whole path of folders (keys); None: a wiki-link


def lost_links(account_id: uuid.UUID, reached: dict[int, uuid.UUID], tree: Places) -> list[Lost]:
    """Of the links that reached a note (`links_to`, read before), those that now reach
    another note or none — and the Markdown links, whose path may no longer be the
    note's even where the name alone still finds it (the caller compares)."""
    if not reached:
        return []
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(
            'SELECT l.id, l.note_id, l.start, l."end", l.form, l.target, l.heading, l.label, '
            "l.target_note_id, l.whole, l.folders, n.notebook_id, n.source_path "
            "FROM links_link l "
            "JOIN notebooks_note n ON n.id = l.note_id WHERE l.account_id = %s "
            "AND l.id = ANY(%s) ORDER BY l.note_id, l.position", [account_id, list(reached)])
        rows = cursor.fetchall()
    return [Lost(Asking(link_id, note_id, start, end, form, target, heading, label),
                 reached[link_id], tree.folder(notebook_id, source_path),
                 tree.written_folder(notebook_id, source_path),
                 (tuple(folders.split("/")) if folders else ()) if whole else None)
            for (link_id, note_id, start, end, form, target, heading, label, now_reaches,
                 whole, folders, notebook_id, source_path) in rows
            if now_reaches != reached[link_id] or whole]


def places_changed(account_id: uuid.UUID, notebook_ids: Iterable[uuid.UUID]) -> int:
    """After notebooks were renamed or moved (their folders are what a link's path
    names): the links asking for the names of the notes in them are resolved again, and
    those notes' own links from where they now are. Returns how many notes' links were
    written anew."""
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT id FROM notebooks_note WHERE account_id = %s "
                       "AND notebook_id = ANY(%s) AND status <> 'deleted'",
                       [account_id, list(notebook_ids)])
        inside = [row[0] for row in cursor.fetchall()]
        if not inside:
            return 0
        targets_changed(account_id, inside)
        cursor.execute("SELECT id, notebook_id, content, source_path FROM notebooks_note n "
                       "WHERE id IN (SELECT DISTINCT note_id FROM links_link "
                       "WHERE account_id = %s AND note_id = ANY(%s))", [account_id, inside])
        linking = [NoteText(*row) for row in cursor.fetchall()]
    links_sync(account_id, linking, placed=True)
    return len(linking)
