"""Files come back as they went in (issue 37 items 5–6), with the real commands in
subprocesses on a fresh data folder, as the README runs them: an Obsidian-style vault
(nested folders, front matter, `[[wiki-links]]`, `.obsidian/` to skip, files of 50 KB
and 150 KB, non-ASCII names, Windows line breaks, a byte-order mark, no final newline)
goes in with `grove ingest`, out with `grove export --markdown`, and `diff -r` finds
nothing changed; that export ingested into a new account and exported again is the
same bytes.

Links too (issue 38 item 7): the vault's `[[wiki-links]]` (by title, alias, path, with a
heading and a label) and Markdown links to `.md` paths resolve in Grove on ingest; in
the export — with notes written in Grove that link to ingested files and to each other
— every link resolves among the exported files the way Obsidian resolves it; and an
account the export is ingested into resolves every link to the same notes."""

from __future__ import annotations

import json
import re
import subprocess
import zipfile
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.grove.runtime.processes import create_user, run_grove

pytestmark = pytest.mark.slow


def _sections(title: str, count: int, size: int) -> str:
    words = ("moraine", "sedge", "[[Projects/Greenhouse]]", "compost", "mulch", "trellis")
    out = [f"# {title}\n"]
    for i in range(count):
        body = " ".join(words[(i + j) % len(words)] for j in range(size // 8))
        out.append(f"## Part {i}\n\n{body}.\n")
    return "\n".join(out)


def make_vault(root: Path) -> dict[str, bytes]:
    files: dict[str, bytes] = {
        "Garden plan.md": ("---\ntags: [garden, plans]\naliases: [Plan]\ncreated: 2026-03-01\n"
                           "---\n" + _sections("Garden plan", 33, 1200)
                           + "\nSee [[Höstsådd 🌱]] and [[Greenhouse#Part 3|the heat]].\n"
                           ).encode(),
        "Projects/Greenhouse.md": _sections("Greenhouse", 97, 1230).encode(),
        "Projects/Året runt/Höstsådd 🌱.md": (
            "---\r\ntags: [sådd]\r\n---\r\n# Höstsådd\r\n\r\nSå vitlök i oktober.\r\n"
            "Täck med halm. Se [[Garden plan]].\r\n").encode(),
        "Journal/2026-12-04.md": b"\n\nA day without a heading, and no final newline.",
        "Journal/\u00dcn\u00efcode notes.txt": "\ufeffBOM first, spaces after.\n\n  \n".encode(),
        "Templates/Daily.md": b"# {{date}}\n\n- [ ] water the beds\n- [ ] [[Garden plan]]\n",
        "Links.md": (b"# Links\n\n- [[Plan]], by its alias\n"
                     b"- [[greenhouse]] by its file name, [[Projects/Greenhouse#Part 2]] by path\n"
                     b"- [the autumn sowing](Projects/%C3%85ret%20runt/H%C3%B6sts%C3%A5dd%20"
                     b"%F0%9F%8C%B1.md), a Markdown link\n"
                     b"- [[Nowhere yet]] leads nowhere yet\n"),
        ".obsidian/app.json": b'{"theme": "dark"}',
        ".obsidian/workspace.md": b"# not a note",
    }
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return files


def unzip(bundle: Path, into: Path) -> Path:
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(into)
    return into


def diff(left: Path, right: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["diff", "-r", *extra, str(left), str(right)], capture_output=True,
                          text=True, check=False)


def test_a_vault_goes_in_and_comes_back_out_unchanged(home, tmp_path):
    vault = tmp_path / "vault"
    files = make_vault(vault)
    assert 45_000 < len(files["Garden plan.md"]) < 60_000
    assert 145_000 < len(files["Projects/Greenhouse.md"]) < 160_000
    assert run_grove("migrate", "--noinput", home=home).returncode == 0
    create_user(home, "alice")
    ingested = run_grove("ingest", str(vault), "--notebook", "Vault", "--user", "alice",
                         "--subfolders", home=home, timeout=600)
    assert ingested.returncode == 0, ingested.stderr
    assert ingested.stderr == ""  # a clean run says nothing else (no broker warnings)
    assert "7 files into 'Vault': 7 notes created" in ingested.stdout
    assert "skipped (hidden): 1" in ingested.stdout  # .obsidian/, not entered

    first = tmp_path / "alice.zip"
    exported = run_grove("export", "--user", "alice", "--markdown", str(first), home=home)
    assert exported.returncode == 0, exported.stderr
    out = unzip(first, tmp_path / "alice")
    # Every file at its path, under the notebook it was ingested into, byte for byte.
    compared = diff(vault, out / "Vault", "-x", ".obsidian")
    assert compared.returncode == 0, compared.stdout
    assert compared.stdout == ""
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == \
        sorted(f"Vault/{name}" for name in files if not name.startswith(".obsidian"))

    # An unchanged vault writes nothing; a changed section is one revision.
    again = run_grove("ingest", str(vault), "--notebook", "Vault", "--user", "alice",
                      "--subfolders", home=home, timeout=600)
    assert "0 notes created, 0 updated, 0 retagged, 7 unchanged" in again.stdout

    # Grove resolved the vault's links as Obsidian does; the one to no file waits.
    links = link_map(home, "alice")
    assert ["Links", "Nowhere yet", None] in links
    assert [link for link in links if link[0] == "Links" and link[2]] == sorted([
        ["Links", "Plan", "Garden plan"],  # an alias
        ["Links", "greenhouse", "Greenhouse"],  # a file's name, in any case
        ["Links", "Projects/Greenhouse", "Greenhouse"],  # a path
        ["Links", "Projects/Året runt/Höstsådd 🌱.md", "Höstsådd"]])  # a Markdown link
    assert ["Garden plan", "Greenhouse", "Greenhouse"] in links

    # Notes written in Grove link to ingested files and to each other.
    made = run_grove("shell", "-c", WRITE_NOTES, home=home)
    assert made.returncode == 0, made.stderr
    second_out = tmp_path / "alice-2.zip"
    assert run_grove("export", "--user", "alice", "--markdown", str(second_out),
                     home=home).returncode == 0
    out = unzip(second_out, tmp_path / "alice-2")
    assert (out / "Vault" / "Seed list.md").read_text() == SEED_LIST
    # Every link in the export resolves among its files as Obsidian resolves it.
    unresolved, checked = obsidian_links(out)
    assert unresolved == [("Vault/Links.md", "Nowhere yet")]
    assert checked >= 12

    # Into a new account at its top level, then out again: the same bytes, and every
    # link resolved to the same note.
    create_user(home, "bob")
    moved = run_grove("ingest", str(out), "--user", "bob", home=home, timeout=600)
    assert moved.returncode == 0, moved.stderr
    assert "9 files into the top level: 9 notes created" in moved.stdout
    second = tmp_path / "bob.zip"
    assert run_grove("export", "--user", "bob", "--markdown", str(second),
                     home=home).returncode == 0
    back = unzip(second, tmp_path / "bob")
    compared = diff(out, back)
    assert compared.returncode == 0, compared.stdout
    assert link_map(home, "bob") == link_map(home, "alice")


SEED_LIST = "# Seed list\n\nGarlic for the [[Höstsådd 🌱#Höstsådd|autumn sowing]], " \
            "beans for the [[Garden plan]].\n"
WRITE_NOTES = f"""
import uuid
from grove.kernel.actor import Actor
from grove.models import Account
from notebooks.models import Notebook
from notebooks.services import note_remember
from grove.kernel.tenancy import tenant
actor = Actor.for_session(Account.objects.get(username="alice").id)
with tenant(actor):
    vault = Notebook.objects.get(name="Vault", parent__isnull=True).id
for text in ({SEED_LIST!r}, "# Seed order\\n\\nOrdered from the [[Seed list]].\\n"):
    note_remember(actor=actor, operation_id=uuid.uuid4(), content=text, kind="note",
                  notebook_id=vault)
"""
LINK_MAP = """
import json
from grove.interfaces.rendering import note_title
from grove.kernel.actor import Actor
from grove.kernel.tenancy import tenant
from grove.models import Account
from links.models import Link
from notebooks.models import Note
actor = Actor.for_session(Account.objects.get(username="{user}").id)
with tenant(actor):
    titles = {{n.id: note_title(n.content, path=n.source_path) for n in Note.objects.all()}}
    rows = sorted([titles[link.note_id], link.target, titles.get(link.target_note_id)]
                  for link in Link.objects.all())
print(json.dumps(rows))
"""


def link_map(home: Path, user: str) -> list[list[str | None]]:
    """Every link of the account's notes: [from note's title, target as written, the
    title of the note it resolved to or None]."""
    read = run_grove("shell", "-c", LINK_MAP.format(user=user), home=home)
    assert read.returncode == 0, read.stderr
    return json.loads(read.stdout.splitlines()[-1])


WIKI = re.compile(r"\[\[([^\]|#]+)(?:#([^\]|]+))?(?:\|[^\]]+)?\]\]")
MARKDOWN = re.compile(r"\]\(([^)\s]+\.md)\)")
ALIASES = re.compile(r"^aliases: \[(.*)\]$", re.MULTILINE)


def obsidian_links(root: Path) -> tuple[list[tuple[str, str]], int]:
    """Obsidian's reading of the links in a folder of Markdown files: `[[name]]` is a
    file named `name.md` in any case, or one whose front matter lists `name` among its
    aliases; `[[folder/name]]` a file whose path ends so; `#Heading` a heading of that
    file; `[text](path.md)` a path from the linking file's folder, percent-decoded.
    Returns (the links that reach no file, how many were checked)."""
    files = {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8-sig")
             for p in root.rglob("*.md")}
    aliases: dict[str, list[str]] = {}
    for path, text in files.items():
        for listed in ALIASES.findall(text[:500]):
            for alias in listed.split(","):
                aliases.setdefault(alias.strip().casefold(), []).append(path)

    def reached(target: str) -> list[str]:
        key = target.strip().casefold()
        if "/" in key:
            return [f for f in files if ("/" + f[:-3].casefold()).endswith("/" + key)]
        return [f for f in files
                if f[:-3].rpartition("/")[2].casefold() == key] + aliases.get(key, [])

    missing, checked = [], 0
    for path, text in files.items():
        for target, heading in WIKI.findall(text):
            checked += 1
            found = reached(target)
            if not found:
                missing.append((path, target))
            elif heading:
                assert any(re.search(rf"^#+ {re.escape(heading)}\s*$", files[f], re.MULTILINE)
                           for f in found), (path, target, heading)
        for href in MARKDOWN.findall(text):
            checked += 1
            folder = path.rpartition("/")[0]
            if f"{folder}/{unquote(href)}".lstrip("/") not in files:
                missing.append((path, href))
    return sorted(missing), checked
