"""Which files of a folder are ingested (issue 22).

Markdown and text files (`SUFFIXES`), walked in a stable order. `.groundignore` files
use gitignore's syntax (matched by `pathspec`'s `GitIgnoreSpec`, which follows git's
rules — negation, directory patterns, anchoring — rather than a hand-written glob): one
applies to its own folder and everything under it, a deeper one overrides a shallower
one for the paths it speaks about, and an ignored folder is not entered (as in git, a
file in it cannot be re-included). Hidden folders and files (`.git`, `.obsidian`,
`.trash`) are never ingested. Symbolic links are not followed.

A zip file is walked by the same rules (`walk_zip`): its `.groundignore` files apply
as they would on disk, and a member whose path leaves the archive (`../`, an absolute
path) is skipped, as is one whose declared size is over the limit — and none is read
past the limit whatever it declares.
"""

from __future__ import annotations

import os
import stat
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pathspec

SUFFIXES = frozenset({".md", ".markdown", ".mdx", ".txt"})
IGNORE_FILE = ".groundignore"
MAX_FILE_BYTES = 5 * 1024 * 1024  # larger files are skipped, not read


@dataclass(frozen=True)
class Found:
    path: PurePosixPath  # relative to the root, with forward slashes
    size: int
    read: Callable[[], bytes]  # the file's bytes (OSError, TooLarge)


class TooLarge(OSError):
    """A zip member that holds more than it declared, past the size limit."""


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
                yield Found(path, size, Path(entry.path).read_bytes)

    yield from visit(root, [])


def found_file(file: Path) -> Found:
    """One file named on its own (not a folder): ingested whatever its name."""
    return Found(PurePosixPath(file.name), file.stat().st_size, file.read_bytes)


def _member_reader(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Callable[[], bytes]:
    def read() -> bytes:
        with archive.open(info) as member:
            data = member.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise TooLarge(f"{info.filename}: more than {MAX_FILE_BYTES} bytes")
        return data
    return read


def walk_zip(archive: zipfile.ZipFile) -> Iterator[Found | Skipped]:
    """`walk` for the members of a zip file, in name order."""
    members = sorted((info for info in archive.infolist() if not info.is_dir()),
                     key=lambda info: info.filename)
    specs: list[tuple[PurePosixPath, pathspec.GitIgnoreSpec]] = []
    for info in members:
        path = PurePosixPath(info.filename)
        if path.name == IGNORE_FILE and _safe(path) and info.file_size <= MAX_FILE_BYTES:
            lines = _member_reader(archive, info)().decode("utf-8", "replace").splitlines()
            specs.append((path.parent, pathspec.GitIgnoreSpec.from_lines(lines)))
    specs.sort(key=lambda item: len(item[0].parts))  # shallower first, as on disk
    for info in members:
        path = PurePosixPath(info.filename)
        if not _safe(path):
            yield Skipped(path, "unsafe path")
            continue
        if path.name == IGNORE_FILE:
            continue
        if any(part.startswith(".") for part in path.parts):
            yield Skipped(path, "hidden")
            continue
        if stat.S_ISLNK(info.external_attr >> 16):
            yield Skipped(path, "symbolic link")
            continue
        mine = [(base, spec) for base, spec in specs if path.is_relative_to(base)]
        folders = [path.parents[i] for i in range(len(path.parts) - 2, -1, -1)]
        if any(_ignored([s for s in mine if folder.is_relative_to(s[0])
                         and folder != s[0]], folder, folder=True) for folder in folders) \
                or _ignored(mine, path, folder=False):
            yield Skipped(path, "ignored")
        elif path.suffix.lower() not in SUFFIXES:
            yield Skipped(path, "not a text note")
        elif info.file_size > MAX_FILE_BYTES:
            yield Skipped(path, "too large")
        else:
            yield Found(path, info.file_size, _member_reader(archive, info))


def _safe(path: PurePosixPath) -> bool:
    return bool(path.parts) and not path.is_absolute() and ".." not in path.parts \
        and "\\" not in str(path) and ":" not in path.parts[0]
