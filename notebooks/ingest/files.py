"""Which files of a folder are ingested (issue 22).

Markdown and text files (`SUFFIXES`), walked in a stable order. `.groundignore` files
use gitignore's syntax (matched by `pathspec`'s `GitIgnoreSpec`, which follows git's
rules — negation, directory patterns, anchoring — rather than a hand-written glob): one
applies to its own folder and everything under it, a deeper one overrides a shallower
one for the paths it speaks about, and an ignored folder is not entered (as in git, a
file in it cannot be re-included). Hidden folders and files (`.git`, `.obsidian`,
`.trash`) are never ingested. Symbolic links are not followed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pathspec

SUFFIXES = frozenset({".md", ".markdown", ".mdx", ".txt"})
IGNORE_FILE = ".groundignore"
MAX_FILE_BYTES = 5 * 1024 * 1024  # larger files are skipped, not read


@dataclass(frozen=True)
class Found:
    path: PurePosixPath  # relative to the root, with forward slashes
    absolute: Path
    size: int


@dataclass(frozen=True)
class Skipped:
    path: PurePosixPath
    reason: str  # ignored | hidden | not a text note | symbolic link | too large


def _spec(folder: Path) -> pathspec.GitIgnoreSpec | None:
    file = folder / IGNORE_FILE
    if not file.is_file():
        return None
    return pathspec.GitIgnoreSpec.from_lines(file.read_text(encoding="utf-8",
                                                            errors="replace").splitlines())


def _ignored(specs: list[tuple[PurePosixPath, pathspec.GitIgnoreSpec]],
             path: PurePosixPath, *, folder: bool) -> bool:
    """Whether the deepest `.groundignore` with an opinion on `path` ignores it."""
    verdict = False
    for base, spec in specs:
        relative = path.relative_to(base).as_posix() + ("/" if folder else "")
        result = spec.check_file(relative)
        if result.include is not None:
            verdict = result.include
    return verdict


def walk(root: Path) -> Iterator[Found | Skipped]:
    """Every file under `root` that is ingested (`Found`) or worth saying why not
    (`Skipped`: other files of a note type, and the rest of the folder's files)."""
    root = root.resolve()

    def visit(folder: Path, specs: list[tuple[PurePosixPath, pathspec.GitIgnoreSpec]]
              ) -> Iterator[Found | Skipped]:
        relative_folder = PurePosixPath(folder.relative_to(root).as_posix())
        spec = _spec(folder)
        if spec is not None:
            specs = [*specs, (relative_folder, spec)]
        with os.scandir(folder) as scan:
            entries = sorted(scan, key=lambda e: e.name)
        for entry in entries:
            path = relative_folder / entry.name
            if entry.name == IGNORE_FILE:
                continue
            if entry.name.startswith("."):
                yield Skipped(path, "hidden")
                continue
            if entry.is_symlink():
                yield Skipped(path, "symbolic link")
                continue
            if entry.is_dir():
                if _ignored(specs, path, folder=True):
                    yield Skipped(path, "ignored")
                else:
                    yield from visit(Path(entry.path), specs)
                continue
            if not entry.is_file():
                continue
            if _ignored(specs, path, folder=False):
                yield Skipped(path, "ignored")
            elif Path(entry.name).suffix.lower() not in SUFFIXES:
                yield Skipped(path, "not a text note")
            elif (size := entry.stat().st_size) > MAX_FILE_BYTES:
                yield Skipped(path, "too large")
            else:
                yield Found(path, Path(entry.path), size)

    yield from visit(root, [])
