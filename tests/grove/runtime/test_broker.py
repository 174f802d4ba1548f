"""The embedded default's broker (`grove.runtime.broker`, `grovefs://`): publishers in other
processes and a consumer, like the web server and `grove worker` — every message arrives
whole and exactly once. With kombu's own filesystem transport this fails most runs: the
consumer takes a message file that a publisher has created but not yet written, and the
JSON error stops the worker ("Unrecoverable error")."""

from __future__ import annotations

import multiprocessing
import time
from collections import Counter
from pathlib import Path

import pytest
from kombu import Connection, Consumer, Exchange, Producer, Queue

from grove.runtime import broker

pytestmark = pytest.mark.slow

PUBLISHERS, EACH = 4, 400
EXCHANGE = Exchange("stress", type="direct", durable=True)
QUEUE = Queue("stress", EXCHANGE, routing_key="stress", durable=True, auto_delete=False)


def options(folder: Path) -> dict:
    return {"data_folder_in": str(folder / "queue"), "data_folder_out": str(folder / "queue"),
            "processed_folder": str(folder / "processed"),
            "control_folder": str(folder / "control"), "store_processed": False,
            "polling_interval": 0}


def publish(folder: Path, publisher: int) -> None:
    """One publishing process (spawned: nothing shared with the test process)."""
    broker.register()
    with Connection("grovefs://", transport_options=options(folder)) as connection:
        producer = Producer(connection.channel(), exchange=EXCHANGE, routing_key="stress",
                            serializer="json")
        for number in range(EACH):
            producer.publish({"p": publisher, "n": number, "pad": "x" * 20_000})


def test_publishers_in_other_processes_and_a_consumer_lose_and_break_nothing(tmp_path):
    broker.register()
    for sub in ("queue", "processed", "control"):
        (tmp_path / sub).mkdir()
    received: Counter[tuple[int, int]] = Counter()

    def on_message(body, message):
        assert len(body["pad"]) == 20_000
        received[(body["p"], body["n"])] += 1
        message.ack()

    with Connection("grovefs://", transport_options=options(tmp_path)) as connection:
        # The worker declares its queue when it starts, before anything is published.
        QUEUE.bind(connection.channel()).declare()
        spawn = multiprocessing.get_context("spawn")
        publishers = [spawn.Process(target=publish, args=(tmp_path, p))
                      for p in range(PUBLISHERS)]
        for process in publishers:
            process.start()
        with Consumer(connection.channel(), queues=[QUEUE], callbacks=[on_message],
                      accept=["json"]):
            deadline = time.monotonic() + 90
            while sum(received.values()) < PUBLISHERS * EACH and time.monotonic() < deadline:
                try:
                    connection.drain_events(timeout=0.5)
                except TimeoutError:
                    pass
        for process in publishers:
            process.join(timeout=30)
    assert [p.exitcode for p in publishers] == [0] * PUBLISHERS
    assert len(received) == PUBLISHERS * EACH and set(received.values()) == {1}
    assert list((tmp_path / "queue").iterdir()) == []  # nothing left, no partial file
