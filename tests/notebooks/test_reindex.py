"""Changing the embedding model: start-up refuses until `grove reindex` has rebuilt
every vector; meanwhile recall keeps working; afterwards only the new vectors remain."""

import pytest
from django.core.management import call_command

from grove.embeddings import get_embedder
from grove.embeddings.profile import check_embedding_profile
from grove.kernel import jobs
from grove.models import EmbeddingProfile
from grove.runtime.config import ConfigError
from notebooks.selectors.recall import recall
from notebooks.services.indexing import EMBED, reindex_progress, reindex_start
from passages.models import PassageVector
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def other_model(settings):
    yield lambda: _switch(settings)
    get_embedder.cache_clear()


def _switch(settings):
    settings.GROVE_EMBEDDER_FACTORY = "tests.fake_embedder.OtherFakeEmbedder"
    get_embedder.cache_clear()


def profiles():
    return dict(EmbeddingProfile.objects.values_list("name", "status"))


def test_reindex_rebuilds_every_vector_then_switches(vacuumed_vectors, other_model, capsys):
    check_embedding_profile()
    assert profiles() == {"fake-hash/384": "active"}
    alice, bob = factories.owner(), factories.owner()
    notes = [factories.note(alice, "garden soil needs compost"),
             factories.note(bob, "compost heaps need turning")]
    for actor in (alice, bob):
        jobs.run_batch(account_id=actor.account_id, kind=EMBED)

    other_model()
    with pytest.raises(ConfigError, match="run `grove reindex`"):
        check_embedding_profile()

    # While it is being built, start-up is allowed and progress is visible.
    assert reindex_start("fake-other/384", 384) == 2
    check_embedding_profile()
    assert reindex_progress("fake-other/384") == (0, 2)
    assert profiles() == {"fake-hash/384": "active", "fake-other/384": "building"}

    call_command("reindex")
    assert "2/2 notes (100.0%)" in capsys.readouterr().err
    assert profiles() == {"fake-hash/384": "retired", "fake-other/384": "active"}
    check_embedding_profile()
    for actor, note in ((alice, notes[0]), (bob, notes[1])):
        with factories.tenant(actor):
            assert list(PassageVector.objects.values_list("profile", flat=True)) == [
                "fake-other/384"]
        result = recall(actor=actor, query="compost")
        assert result.meta.mode == "hybrid" and result.data[0].note.id == note.id
        assert "semantic" in result.data[0].matched
