"""STYLE §4: no network I/O inside a transaction. With the `openai` provider, making the
query's vector is an HTTP call, so recall makes it before its tenant transaction opens.

Real commits (`committed`): under the usual test wrapper every statement is inside a
transaction, so "outside" could not be observed."""

from django.db import connection

from notebooks.selectors.recall import recall
from tests import factories
from tests.fake_embedder import FakeEmbedder


class WatchingEmbedder(FakeEmbedder):
    """The test embedder, noting whether a transaction was open at each call."""

    def __init__(self) -> None:
        self.in_transaction: list[bool] = []

    def embed(self, texts):
        self.in_transaction.append(connection.in_atomic_block)
        return super().embed(texts)


def test_the_query_is_embedded_before_the_transaction_opens(committed, monkeypatch):
    owner = factories.owner()
    factories.note(owner, "Sailing through the fjords in June")
    embedder = WatchingEmbedder()
    monkeypatch.setattr("notebooks.selectors.recall.get_embedder", lambda: embedder)

    found = recall(actor=owner, query="fjords sailing")

    assert found.meta.mode == "hybrid"
    assert embedder.in_transaction == [False]
    assert [item.note.content for item in found.data] == ["Sailing through the fjords in June"]
