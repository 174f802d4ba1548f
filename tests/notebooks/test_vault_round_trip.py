"""Files come back as they went in (issue 37 items 5–6), with the real commands in
subprocesses on a fresh data folder, as the README runs them: an Obsidian-style vault
(nested folders, front matter, `[[wiki-links]]`, `.obsidian/` to skip, files of 50 KB
and 150 KB, non-ASCII names, Windows line breaks, a byte-order mark, no final newline)
goes in with `grove ingest`, out with `grove export --markdown`, and `diff -r` finds
nothing changed; that export ingested into a new account and exported again is the
same bytes."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

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
    assert "6 files into 'Vault': 6 notes created" in ingested.stdout
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
    assert "0 notes created, 0 updated, 0 retagged, 6 unchanged" in again.stdout

    # Into a new account at its top level, then out again: the same bytes.
    create_user(home, "bob")
    moved = run_grove("ingest", str(out), "--user", "bob", home=home, timeout=600)
    assert moved.returncode == 0, moved.stderr
    assert "6 files into the top level: 6 notes created" in moved.stdout
    second = tmp_path / "bob.zip"
    assert run_grove("export", "--user", "bob", "--markdown", str(second),
                     home=home).returncode == 0
    back = unzip(second, tmp_path / "bob")
    compared = diff(out, back)
    assert compared.returncode == 0, compared.stdout
