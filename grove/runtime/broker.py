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
updates of an exchange table are serialised by a lock file.

kombu's consumer also lists and sorts the whole folder for every message it takes: with
36,000 stale wake-ups left in a data folder that is ~30 ms a message (measured here),
and new jobs waited behind them for over 20 minutes. Here one listing serves every queue
the channel consumes and is used up before the folder is listed again (O(1) amortised
per message); while one queue still has listed messages, an empty one looks again at
most every `RELIST_EVERY` seconds, so a newly arrived maintenance task waits that long
at most. A message is taken by renaming it to a hidden name in the same folder (atomic:
of two consumers exactly one gets it).

And when a worker has taken as many messages as its prefetch allows, kombu's loop sleeps
the whole polling interval before it looks again, even if a task finished at once: with
two threads, two messages per 50 ms — a backlog of 2,000 no-op wake-ups took a minute to
drain. Here the pause ends as soon as a message is acknowledged. Everything else is
kombu's. Selected by the broker URL `grovefs://` (the default without Redis).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import threading
import uuid
from collections import deque
from pathlib import Path
from queue import Empty
from time import monotonic, monotonic_ns
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import TRANSPORT_ALIASES, filesystem, virtual
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

SCHEME = "grovefs"
RELIST_EVERY = 1.0  # seconds (see the module docstring)


FOLDERS = ("data_folder_in", "data_folder_out", "processed_folder", "control_folder")


def ensure_folders(options: dict[str, Any]) -> None:
    """Make the folders the transport options name (owner-only). Every channel does it
    as it opens, so the first message of a fresh data folder finds them — whichever
    process sends it. Raises OSError when they cannot be made."""
    for key in FOLDERS:
        if options.get(key):
            Path(options[key]).mkdir(parents=True, exist_ok=True, mode=0o700)


def _write_whole(path: Path, data: bytes) -> None:
    """Write `path` so that readers see all of `data` or the previous file."""
    partial = path.parent / f".{uuid.uuid4()}.partial"
    try:
        partial.write_bytes(data)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


class QoS(virtual.QoS):
    """Tells the transport when a message is settled, so a consumer waiting for room in
    its prefetch window stops waiting at once."""

    def ack(self, delivery_tag: Any) -> None:
        super().ack(delivery_tag)
        self._settled()

    def reject(self, delivery_tag: Any, requeue: bool = False) -> None:
        super().reject(delivery_tag, requeue=requeue)
        self._settled()

    def _settled(self) -> None:
        transport = self.channel.connection  # None once the channel closed (shutdown)
        if transport is not None:
            transport.settled.set()


class Channel(filesystem.Channel):
    QoS = QoS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        try:
            ensure_folders(self.transport_options)
        except OSError as exc:
            raise ChannelError(f"Cannot make the broker's folders ({exc.strerror})") from exc
        self._listed: dict[str, deque[str]] = {}  # queue → message files, oldest first
        self._listed_at = float("-inf")

    def _get(self, queue: str) -> Any:  # type: ignore[override]
        """The oldest message of `queue`, from the current listing of the folder."""
        pending = self._listed.get(queue)
        if not pending:
            self._relist(queue)
            pending = self._listed.get(queue)
        while pending:
            payload = self._take(pending.popleft())
            if payload is not None:
                return loads(bytes_to_str(payload))
        raise Empty()

    def _relist(self, queue: str) -> None:
        """List the folder once for every queue this channel consumes — unless another of
        them still has listed messages and the last listing is recent."""
        consumed = {*self._active_queues, queue}
        now = monotonic()
        if any(self._listed.get(q) for q in consumed) and now - self._listed_at < RELIST_EVERY:
            return
        listed: dict[str, deque[str]] = {}
        try:
            names = sorted(os.listdir(self.data_folder_in))
        except OSError as exc:
            raise ChannelError(f"Cannot list {self.data_folder_in!r}") from exc
        for name in names:
            # "<time>_<uuid>.<queue>.msg"; hidden names are files being written or taken.
            of_queue = name.partition(".")[2].removesuffix(".msg")
            if name.startswith(".") or not name.endswith(".msg") or not of_queue:
                continue
            listed.setdefault(of_queue, deque()).append(name)
        self._listed, self._listed_at = listed, now

    def _take(self, name: str) -> bytes | None:
        """Read and remove one message file; None if another consumer took it first."""
        folder = Path(self.data_folder_in)
        taken = folder / f".taken-{uuid.uuid4()}-{name}"
        try:
            os.rename(folder / name, taken)  # atomic: exactly one consumer wins
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ChannelError(f"Cannot take {name!r} from the queue") from exc
        try:
            payload = taken.read_bytes()
            if self.store_processed:
                shutil.move(taken, Path(self.processed_folder) / name)
            else:
                taken.unlink()
        except OSError as exc:
            raise ChannelError(f"Cannot read {name!r} from the queue") from exc
        return payload

    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        """Put a message on `queue`, atomically."""
        # Nanoseconds, fixed width: names sort in the order messages were put (kombu's
        # milliseconds left messages of one millisecond in random order). Messages of
        # older versions (shorter names) sort after these; order across versions
        # does not matter.
        name = f"{monotonic_ns():020d}_{uuid.uuid4()}.{queue}.msg"
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

    @property
    def default_connection_params(self) -> dict[str, Any]:
        """A folder has no host or port: kombu's default ('localhost') would make every
        connection log that no hostname was supplied — on every `grove ingest`."""
        return {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settled = threading.Event()

    def drain_events(  # type: ignore[override]  # kombu's virtual signature
            self, connection: Any, timeout: float | None = None) -> None:
        """kombu's loop, except that the pause between polls ends when a message is
        acknowledged (a worker thread became free) rather than after the full
        polling interval."""
        assert self.cycle is not None  # set by kombu's constructor
        started = monotonic()
        pause = self.polling_interval
        if timeout and pause and pause > timeout:
            pause = timeout
        while True:
            try:
                self.cycle.get(self._deliver, timeout=timeout)
            except Empty:
                if timeout is not None and monotonic() - started >= timeout:
                    raise TimeoutError from None
                if pause is not None and self.settled.wait(pause):
                    self.settled.clear()
            else:
                return


def register() -> None:
    """Make `grovefs://` resolve to this transport (idempotent)."""
    TRANSPORT_ALIASES.setdefault(SCHEME, f"{__name__}:Transport")
