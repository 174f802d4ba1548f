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
path: `unsafe_path_reason`) is skipped with that reason, as is one whose declared size
is over the limit — and none is read past the limit whatever it declares. A zip that
declares more than ZIP_MAX_MEMBERS entries is refused before its directory is read
(`TooManyMembers`), and a name that appears twice is read once (a bomb that repeats one
large entry gets one).
"""

from __future__ import annotations

import os
import stat
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

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


class TooManyMembers(ValueError):
    """A zip that declares more entries than ZIP_MAX_MEMBERS."""


ZIP_MAX_MEMBERS = 50_000
# What reading a damaged, encrypted or exotic zip member can raise.
ZIP_ERRORS = (OSError, zipfile.BadZipFile, zlib.error, RuntimeError, NotImplementedError,
              EOFError)


@dataclass(frozen=True)
class Skipped:
    path: PurePosixPath
    reason: str  # ignored | hidden | not a text note | symbolic link | too large |
    # absolute path | leaves the folder (..) | unsafe path


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


def declared_members(file: Any) -> int | None:
    """How many entries a zip's end record declares (None: not a zip), read before
    `ZipFile` parses its whole directory into memory."""
    try:
        end = zipfile._EndRecData(file)  # type: ignore[attr-defined]  # noqa: SLF001
    except OSError:
        return None
    finally:
        file.seek(0)
    return None if not end else int(end[zipfile._ECD_ENTRIES_TOTAL])  # type: ignore[attr-defined]  # noqa: SLF001


def open_zip(file: Any) -> zipfile.ZipFile:
    """`ZipFile(file)`, refused first when it declares too many entries."""
    declared = declared_members(file)
    if declared is not None and declared > ZIP_MAX_MEMBERS:
        raise TooManyMembers(f"the zip declares {declared} entries; at most "
                             f"{ZIP_MAX_MEMBERS}")
    return zipfile.ZipFile(file)


def walk_zip(archive: zipfile.ZipFile) -> Iterator[Found | Skipped]:
    """`walk` for the members of a zip file, in name order."""
    members: dict[str, zipfile.ZipInfo] = {}
    for info in archive.infolist():
        if not info.is_dir():
            members.setdefault(info.filename, info)  # a repeated name is read once
    specs: dict[PurePosixPath, pathspec.GitIgnoreSpec] = {}
    for name, info in members.items():
        path = PurePosixPath(name)
        if path.name == IGNORE_FILE and unsafe_path_reason(path) is None \
                and info.file_size <= MAX_FILE_BYTES:
            try:
                text = _member_reader(archive, info)().decode("utf-8", "replace")
            except ZIP_ERRORS:
                continue
            specs[path.parent] = pathspec.GitIgnoreSpec.from_lines(text.splitlines())
    for name in sorted(members):
        info, path = members[name], PurePosixPath(name)
        if (unsafe := unsafe_path_reason(path)) is not None:
            yield Skipped(path, unsafe)
            continue
        if path.name == IGNORE_FILE:
            continue
        if any(part.startswith(".") for part in path.parts):
            yield Skipped(path, "hidden")
            continue
        if stat.S_ISLNK(info.external_attr >> 16):
            yield Skipped(path, "symbolic link")
            continue
        if _ignored_in_zip(specs, path):
            yield Skipped(path, "ignored")
        elif path.suffix.lower() not in SUFFIXES:
            yield Skipped(path, "not a text note")
        elif info.file_size > MAX_FILE_BYTES:
            yield Skipped(path, "too large")
        else:
            yield Found(path, info.file_size, _member_reader(archive, info))


def _ignored_in_zip(specs: dict[PurePosixPath, pathspec.GitIgnoreSpec],
                    path: PurePosixPath) -> bool:
    """As on disk: an ignored folder is not entered, and the deepest `.groundignore`
    with an opinion decides. Only the member's own folders are looked up."""
    folders = [PurePosixPath(*path.parts[:depth]) for depth in range(len(path.parts))]
    mine = [(folder, specs[folder]) for folder in folders if folder in specs]
    for depth in range(1, len(path.parts) - 1 + 1):
        folder = PurePosixPath(*path.parts[:depth])
        if folder != path and _ignored([s for s in mine if folder.is_relative_to(s[0])
                                        and folder != s[0]], folder, folder=True):
            return True
    return _ignored(mine, path, folder=False)


def unsafe_path_reason(path: PurePosixPath) -> str | None:
    """Why a path from an upload (a zip member's name, a folder upload's relative path)
    cannot be placed inside the notebook, or None when it can."""
    if not path.parts:
        return "unsafe path"
    if path.is_absolute():
        return "absolute path"
    if ".." in path.parts:
        return "leaves the folder (..)"
    if "\\" in str(path) or ":" in path.parts[0]:
        return "unsafe path"
    return None
