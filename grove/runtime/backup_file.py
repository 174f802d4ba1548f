"""The backup file (`grove backup`, `grove restore`): one tar, checksummed member by member.

Members, in this order: `database.dump` (pg_dump's custom format, streamed straight from
pg_dump into the tar: no second copy on disk), `grove.toml` and `secret_key` when there
are such files, and `manifest.json` last — it records the sha256 and size of every other
member, so it can only be written once they are. Beside the tar, `<name>.sha256` holds
the whole file's checksum in `sha256sum -c` format.

A backup is written to `<name>.partial` (mode 0600: it holds the secret key) and linked
to its name only when complete, so an existing file is never overwritten and a name never
points at half a backup; a backup that fails leaves nothing behind.

Reading checks everything before anything is restored, and everything is read from the
one file descriptor opened for that check: the dump is streamed to pg_restore from it
again, hashed on the way, its last chunk held back until the whole matches the checksum
that was checked (`Backup.copy_dump`). A file replaced or rewritten after the check is
therefore never loaded. The checksums are plain sha256, not keyed: they find damage and
truncation, not tampering — whoever can write a backup can write matching checksums,
and a restore runs the dump's SQL. A backup is as trusted as the data folder.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

FORMAT = 1
DUMP = "database.dump"
SETTINGS_FILE = "grove.toml"
SECRET_KEY_FILE = "secret_key"  # noqa: S105 - a file name
MANIFEST = "manifest.json"
MEMBERS = (DUMP, SETTINGS_FILE, SECRET_KEY_FILE, MANIFEST)
SMALL_MEMBER_MAX = 1024 * 1024  # everything but the dump is read into memory
BLOCK = 512
CHUNK = 1024 * 1024


class BackupError(Exception):
    """A backup or restore that cannot go on, phrased as the one line the user reads."""


def sidecar_of(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _header(name: str, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = size, 0o600, int(time.time())
    # GNU format keeps the header one block for any size (base-256 beyond 8 GiB), which
    # the streamed dump needs: its header is written over a placeholder afterwards.
    header = info.tobuf(format=tarfile.GNU_FORMAT)
    assert len(header) == BLOCK
    return header


class BackupWriter:
    """Writes one backup file. `add_stream`/`add_bytes` members, then `finish(manifest)`;
    on any failure `discard()` (the `.partial` file goes, nothing else was touched)."""

    def __init__(self, path: Path):
        self.path = path
        self.partial = path.with_name(path.name + ".partial")
        try:
            fd = os.open(self.partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                         0o600)
        except FileExistsError:
            raise BackupError(f"{self.partial} exists: another backup is writing it, or one "
                              "was interrupted (then remove it)") from None
        except OSError as exc:
            raise BackupError(f"{self.partial}: cannot be written ({exc.strerror})") from None
        self.fh: IO[bytes] = os.fdopen(fd, "wb")
        self.members: dict[str, dict[str, Any]] = {}
        self.made: list[Path] = []  # files this writer created under their final names
        self.staged: Path | None = None

    def add_stream(self, name: str, source: IO[bytes]) -> None:
        """Copy `source` to its end as member `name`, hashing it on the way."""
        start = self.fh.tell()
        self.fh.write(b"\0" * BLOCK)  # the header, once the size is known
        digest, size = hashlib.sha256(), 0
        while chunk := source.read(CHUNK):
            self.fh.write(chunk)
            digest.update(chunk)
            size += len(chunk)
        self.fh.write(b"\0" * (-size % BLOCK))
        end = self.fh.tell()
        self.fh.seek(start)
        self.fh.write(_header(name, size))
        self.fh.seek(end)
        self.members[name] = {"sha256": digest.hexdigest(), "size": size}

    def add_bytes(self, name: str, data: bytes) -> None:
        self.add_stream(name, io.BytesIO(data))

    def finish(self, manifest: dict[str, Any]) -> str:
        """Write the manifest and the end of the archive, make it durable, give it its
        name (never over an existing file) and write the checksum file beside it.
        Returns the whole file's sha256. On failure the caller `discard()`s: nothing of
        this backup stays, the file already named included."""
        self.add_bytes(MANIFEST, json.dumps({**manifest, "members": self.members},
                                            indent=2, sort_keys=True).encode() + b"\n")
        self.fh.write(b"\0" * (2 * BLOCK))
        self.fh.flush()
        os.fsync(self.fh.fileno())
        self.fh.close()
        # Read back what reached the disk: the checksum vouches for the file, not for
        # what this process meant to write.
        whole = hashlib.sha256()
        with self.partial.open("rb") as fh:
            while chunk := fh.read(CHUNK):
                whole.update(chunk)
        sidecar = sidecar_of(self.path)
        self.staged = sidecar.with_name(sidecar.name + ".partial")
        self.staged.unlink(missing_ok=True)
        fd = os.open(self.staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(f"{whole.hexdigest()}  {self.path.name}\n")
            fh.flush()
            os.fsync(fh.fileno())
        _publish(self.partial, self.path)
        self.made.append(self.path)
        _publish(self.staged, sidecar)
        self.made.append(sidecar)
        _sync_folder(self.path.parent)
        return whole.hexdigest()

    def discard(self) -> None:
        """Remove everything this writer made (it may fail half-way: never raises)."""
        try:
            self.fh.close()  # flushes what is buffered: may fail again on a full disk
        except OSError:
            pass
        for path in (self.partial, self.staged, *self.made):
            if path is not None:
                try:
                    path.unlink(missing_ok=True)
                except OSError:
                    pass


def _publish(staged: Path, final: Path) -> None:
    """`staged` becomes `final`, refusing to replace an existing file (rename would)."""
    try:
        os.link(staged, final)
    except FileExistsError:
        staged.unlink(missing_ok=True)
        raise BackupError(f"{final} exists; a backup never overwrites a file") from None
    except OSError:  # a file system without hard links
        if final.exists():
            staged.unlink(missing_ok=True)
            raise BackupError(f"{final} exists; a backup never overwrites a file") from None
        staged.rename(final)
        return
    staged.unlink()


def _sync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _Hashing(io.RawIOBase):
    """Reads a file sequentially, hashing every byte that passes."""

    def __init__(self, raw: IO[bytes], digest: Any):
        self.raw, self.digest = raw, digest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.raw.read(len(buffer))
        self.digest.update(data)
        buffer[:len(data)] = data
        return len(data)


@dataclass
class Backup:
    """A verified backup file: its manifest, its small members' bytes, and the file it
    was read from, still open (`close()` it), from which its dump is loaded."""

    path: Path
    manifest: dict[str, Any]
    file: IO[bytes]
    size: int
    dump: tuple[int, int, str]  # where the dump's bytes start, their size and sha256
    files: dict[str, bytes] = field(default_factory=dict)
    sidecar_checked: bool = False

    def close(self) -> None:
        self.file.close()

    def copy_dump(self, sink: Callable[[bytes], object]) -> None:
        """Stream the dump to `sink` from the file descriptor it was checked through,
        hashing it again on the way; the last chunk goes only once the whole matches
        the checksum checked, so a file rewritten since is refused before pg_restore
        has it all (it commits only after the last byte). When `sink` stops taking
        (BrokenPipeError: `pg_restore --list` has its table of contents, or pg_restore
        failed), the rest is still read and checked: what it took was checked bytes."""
        start, size, expected = self.dump
        fd, digest, position, held, taking = self.file.fileno(), hashlib.sha256(), 0, b"", True
        while position < size:
            chunk = os.pread(fd, min(CHUNK, size - position), start + position)
            if not chunk:
                break
            position += len(chunk)
            digest.update(chunk)
            if held and taking:
                taking = _feed(sink, held)
            held = chunk
        if position != size or digest.hexdigest() != expected:
            raise BackupError(f"{self.path}: changed since it was checked ({DUMP} no longer "
                              "matches its checksum); nothing was loaded from it")
        if held and taking:
            _feed(sink, held)


def _feed(sink: Callable[[bytes], object], chunk: bytes) -> bool:
    try:
        sink(chunk)
    except BrokenPipeError:
        return False
    return True


def read_backup(path: Path) -> Backup:
    """Open the file and read it whole once, checking it: every member against the
    manifest's sha256 and size, no member missing or unknown, and the whole file against
    `<name>.sha256` when that file is there. Raises `BackupError` on the first problem;
    else the file stays open in the `Backup` returned (see `Backup.copy_dump`)."""
    try:
        raw = path.open("rb")
    except FileNotFoundError:
        raise BackupError(f"{path}: no such backup file") from None
    except OSError as exc:
        raise BackupError(f"{path}: cannot be read ({exc.strerror})") from None
    try:
        if not stat.S_ISREG(os.fstat(raw.fileno()).st_mode):
            raise BackupError(f"{path}: no such backup file (not a file)")
        return _check(path, raw)
    except BaseException:
        raw.close()
        raise


def _check(path: Path, raw: IO[bytes]) -> Backup:
    whole = hashlib.sha256()
    found: dict[str, dict[str, Any]] = {}
    files: dict[str, bytes] = {}
    dump_start = 0
    try:
        stream = io.BufferedReader(_Hashing(raw, whole), CHUNK)
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for info in tar:
                if info.name not in MEMBERS or not info.isfile() or info.name in found:
                    raise BackupError(f"{path}: not a Grove backup (unexpected member "
                                      f"{info.name!r})")
                if info.name != DUMP and info.size > SMALL_MEMBER_MAX:
                    raise BackupError(f"{path}: damaged ({info.name} is too large)")
                if info.name == DUMP:
                    dump_start = info.offset_data
                member = tar.extractfile(info)
                assert member is not None
                digest, size, kept = hashlib.sha256(), 0, []
                while chunk := member.read(CHUNK):
                    digest.update(chunk)
                    size += len(chunk)
                    if info.name != DUMP:
                        kept.append(chunk)
                if size != info.size:
                    raise BackupError(f"{path}: damaged ({info.name} is cut short)")
                found[info.name] = {"sha256": digest.hexdigest(), "size": size}
                if info.name != DUMP:
                    files[info.name] = b"".join(kept)
        while stream.read(CHUNK):  # whatever follows the end of the archive
            pass
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise BackupError(f"{path}: damaged or not a Grove backup ({exc})") from None
    if MANIFEST not in files:
        raise BackupError(f"{path}: damaged or not a Grove backup (no {MANIFEST}: cut short or "
                          "corrupted)")
    try:
        manifest = json.loads(files[MANIFEST])
        expected = manifest["members"]
        version = manifest["format"]
    except (ValueError, KeyError, TypeError):
        raise BackupError(f"{path}: damaged ({MANIFEST} cannot be read)") from None
    if not isinstance(version, int) or version > FORMAT:
        raise BackupError(f"{path}: backup format {version!r} is newer than this Grove "
                          f"understands ({FORMAT}); restore it with a newer Grove")
    del found[MANIFEST]
    if DUMP not in expected:
        raise BackupError(f"{path}: damaged ({MANIFEST} names no {DUMP})")
    for name in sorted(set(expected) | set(found)):
        if name not in found:
            raise BackupError(f"{path}: damaged ({name} is missing)")
        if found[name] != expected.get(name):
            raise BackupError(f"{path}: damaged ({name} does not match its checksum)")
    backup = Backup(path=path, manifest=manifest, file=raw, files=files,
                    size=os.fstat(raw.fileno()).st_size,
                    dump=(dump_start, found[DUMP]["size"], found[DUMP]["sha256"]))
    sidecar = sidecar_of(path)
    if sidecar.is_file():
        recorded = sidecar.read_text(errors="replace").split()
        if not recorded or recorded[0].lower() != whole.hexdigest():
            raise BackupError(f"{path}: does not match its checksum in {sidecar}")
        backup.sidecar_checked = True
    return backup


def secret_key_check(key: str) -> str:
    """What the manifest records of the secret key: enough to tell whether a restore is
    given the same key, nothing that helps to find it (an HMAC made with the key)."""
    import hmac

    return hmac.new(key.encode(), b"grove backup: secret key check", hashlib.sha256).hexdigest()
