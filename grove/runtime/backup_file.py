"""The backup file (`grove backup`, `grove restore`): one tar, checksummed member by member.

Members, in this order: `database.dump` (pg_dump's custom format, streamed straight from
pg_dump into the tar: no second copy on disk), `grove.toml` and `secret_key` when there
are such files, and `manifest.json` last — it records the sha256 and size of every other
member, so it can only be written once they are. Beside the tar, `<name>.sha256` holds
the whole file's checksum in `sha256sum -c` format.

A backup is written to `<name>.partial` (mode 0600: it holds the secret key) and linked
to its name only when complete, so an existing file is never overwritten and a name never
points at half a backup. Reading checks everything before anything is restored.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
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
        Returns the whole file's sha256."""
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
        _publish(self.partial, self.path)
        sidecar = sidecar_of(self.path)
        staged = sidecar.with_name(sidecar.name + ".partial")
        staged.unlink(missing_ok=True)
        fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(f"{whole.hexdigest()}  {self.path.name}\n")
            fh.flush()
            os.fsync(fh.fileno())
        _publish(staged, sidecar)
        _sync_folder(self.path.parent)
        return whole.hexdigest()

    def discard(self) -> None:
        if not self.fh.closed:
            self.fh.close()
        self.partial.unlink(missing_ok=True)


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
    """A verified backup file: its manifest and its small members' bytes."""

    path: Path
    manifest: dict[str, Any]
    files: dict[str, bytes] = field(default_factory=dict)
    sidecar_checked: bool = False

    @property
    def size(self) -> int:
        return self.path.stat().st_size


def read_backup(path: Path) -> Backup:
    """Read the whole file once and check it: every member against the manifest's sha256
    and size, no member missing or unknown, and the whole file against `<name>.sha256`
    when that file is there. Raises `BackupError` on the first problem."""
    if not path.is_file():
        raise BackupError(f"{path}: no such backup file")
    whole = hashlib.sha256()
    found: dict[str, dict[str, Any]] = {}
    files: dict[str, bytes] = {}
    try:
        with path.open("rb") as raw:
            stream = io.BufferedReader(_Hashing(raw, whole), CHUNK)
            with tarfile.open(fileobj=stream, mode="r|") as tar:
                for info in tar:
                    if info.name not in MEMBERS or not info.isfile() or info.name in found:
                        raise BackupError(f"{path}: not a Grove backup (unexpected member "
                                          f"{info.name!r})")
                    if info.name != DUMP and info.size > SMALL_MEMBER_MAX:
                        raise BackupError(f"{path}: damaged ({info.name} is too large)")
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
    backup = Backup(path=path, manifest=manifest, files=files)
    sidecar = sidecar_of(path)
    if sidecar.is_file():
        recorded = sidecar.read_text(errors="replace").split()
        if not recorded or recorded[0].lower() != whole.hexdigest():
            raise BackupError(f"{path}: does not match its checksum in {sidecar}")
        backup.sidecar_checked = True
    return backup


def copy_member(path: Path, name: str, sink: Callable[[bytes], object]) -> None:
    """Stream one member of an already verified backup to `sink`, chunk by chunk."""
    with path.open("rb") as raw, tarfile.open(fileobj=raw, mode="r|") as tar:
        for info in tar:
            if info.name == name:
                member = tar.extractfile(info)
                assert member is not None
                while chunk := member.read(CHUNK):
                    sink(chunk)
                return
    raise BackupError(f"{path}: {name} is missing")


def secret_key_check(key: str) -> str:
    """What the manifest records of the secret key: enough to tell whether a restore is
    given the same key, nothing that helps to find it (an HMAC made with the key)."""
    import hmac

    return hmac.new(key.encode(), b"grove backup: secret key check", hashlib.sha256).hexdigest()
