"""The embedded default's Celery broker: kombu's filesystem transport, with message files
that appear whole.

kombu writes a message straight into the queue folder (open, lock, write) while a
consumer takes any `*.msg` file it lists — moving it away and reading it without the
lock. A consumer that lists the file between its creation and the end of the write
reads a truncated message, and the JSON error stops the worker ("Unrecoverable error").
Its exchange tables (which queues an exchange routes to) have the same race: a table is
created empty and then filled, and a publisher reading it meanwhile fails.

Here every file is written under a name no reader looks at and then renamed into place
(`os.replace`, atomic within one folder), so a reader sees the whole file or nothing;
updates of an exchange table are serialised by a lock file. Everything else is kombu's.
Selected by the broker URL `grovefs://` (the default without Redis).
"""

from __future__ import annotations

import fcntl
import os
import uuid
from pathlib import Path
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import TRANSPORT_ALIASES, filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

SCHEME = "grovefs"


def _write_whole(path: Path, data: bytes) -> None:
    """Write `path` so that readers see all of `data` or the previous file."""
    partial = path.parent / f".{uuid.uuid4()}.partial"
    try:
        partial.write_bytes(data)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


class Channel(filesystem.Channel):
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        """Put a message on `queue`, atomically."""
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        try:
            _write_whole(Path(self.data_folder_out) / name, str_to_bytes(dumps(payload)))
        except OSError as exc:
            raise ChannelError(f"Cannot add a message to {self.data_folder_out!r}") from exc

    def get_table(self, exchange: str) -> list:
        file = self._exchange_file(exchange)
        try:
            table = loads(bytes_to_str(file.read_bytes()))
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise ChannelError(f"Cannot open {file}") from exc
        return [filesystem.exchange_queue_t(*q) for q in table]

    def _update_table(self, exchange: str, routing_key: str, pattern: str, queue: str, *,
                      bind: bool) -> None:
        """Add (bind) or remove a queue in an exchange's table, one writer at a time."""
        file = self._exchange_file(exchange)
        self.control_folder.mkdir(exist_ok=True)
        entry = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")
        try:
            with open(self.control_folder / f".{exchange}.lock", "wb") as lock:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
                queues = self.get_table(exchange)
                if bind and entry not in queues:
                    _write_whole(file, str_to_bytes(dumps([entry, *queues])))
                elif not bind and entry in queues:
                    queues.remove(entry)
                    _write_whole(file, str_to_bytes(dumps(queues)))
        except OSError as exc:
            raise ChannelError(f"Cannot open {file}") from exc

    def _queue_bind(self, exchange: str, routing_key: str, pattern: str, queue: str) -> None:
        self._update_table(exchange, routing_key, pattern, queue, bind=True)

    def _delete(self, queue: str, exchange: str, routing_key: str, pattern: str,
                *args: Any, **kwargs: Any) -> None:
        virtual_delete = super(filesystem.Channel, self)._delete  # skip kombu's file update
        virtual_delete(queue, exchange, routing_key, pattern, *args, **kwargs)
        self._update_table(exchange, routing_key, pattern, queue, bind=False)


class Transport(filesystem.Transport):
    Channel = Channel


def register() -> None:
    """Make `grovefs://` resolve to this transport (idempotent)."""
    TRANSPORT_ALIASES.setdefault(SCHEME, f"{__name__}:Transport")
