"""A note's passages kept in step with its content (issue 37; docs/architecture.md,
"Documents and passages"): a long document is cut into heading-aware passages, an edit of
one section re-embeds only the passages it changed, a memory record is one passage."""

import random

import pytest

from grove.kernel import jobs
from grove.models import Job
from notebooks import services
from notebooks.selectors.recall import recall
from notebooks.services.indexing import EMBED
from passages.chunking import CHUNK_CHARS
from passages.models import Passage, PassageVector
from tests import factories
from tests.factories import op
from tests.fake_embedder import FakeEmbedder

pytestmark = pytest.mark.django_db

WORDS = ("river delta sediment basin levee channel meander floodplain estuary tide marsh "
         "reed heron willow alder gravel silt clay loam bank ford weir sluice").split()


def document(sections: int, *, seed: int = 3, section_chars: int = 1900) -> str:
    """A markdown document of `sections` sections of prose, each about `section_chars`."""
    rng = random.Random(seed)
    parts = ["# Field manual"]
    for number in range(sections):
        parts.append(f"## Section {number}")
        text = []
        while sum(len(t) for t in text) < section_chars:
            text.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 16)))
                        .capitalize() + ".")
        parts.append(" ".join(text[: len(text) // 2]))
        parts.append(" ".join(text[len(text) // 2:]))
    return "\n\n".join(parts)


def index_all(actor) -> int:
    ran = 0
    while batch := jobs.run_batch(account_id=actor.account_id, kind=EMBED):
        ran += batch
    return ran


def rows(actor, note_id):
    with factories.tenant(actor):
        return list(Passage.objects.filter(note_id=note_id).order_by("position")
                    .values_list("id", "position", "start", "end", "text", "headings"))


def vector_rows(actor, note_id):
    with factories.tenant(actor):
        return dict(PassageVector.objects.filter(note_id=note_id)
                    .values_list("passage_id", "id"))


@pytest.fixture
def owner():
    return factories.owner()


def test_a_long_document_is_cut_into_passages_that_are_spans_of_its_text(owner):
    text = document(80)
    assert len(text) > 150_000
    note = factories.note(owner, text, kind="note")
    cut = rows(owner, note.id)
    assert len(cut) > 100
    assert [position for _, position, *_ in cut] == list(range(1, len(cut) + 1))
    for _, _, start, end, passage, headings in cut:
        assert text[start:end] == passage and len(passage) <= CHUNK_CHARS
        assert headings[0] == "Field manual"
    # Every section's text is in some passage that carries that section's heading.
    assert {h[-1] for *_, h in cut} >= {f"Section {n}" for n in range(80)}


def test_one_section_edited_re_embeds_only_the_passages_it_changed(owner):
    text = document(80)
    note = factories.note(owner, text, kind="note")
    FakeEmbedder.calls.clear()
    index_all(owner)
    first = rows(owner, note.id)
    embedded_first = sum(FakeEmbedder.calls)
    assert embedded_first == len(first)  # every passage once
    # Jobs take at most PASSAGES_PER_BATCH passages each: the note's job was queued again
    # until none was missing, and the note is ready only then.
    assert factories.note_row(owner, note.id).indexing == "ready"
    before = vector_rows(owner, note.id)
    assert set(before) == {row[0] for row in first}

    edited = text.replace("## Section 40\n\n", "## Section 40\n\nA new first sentence here. ")
    assert edited != text
    FakeEmbedder.calls.clear()
    with factories.tenant(owner):
        jobs_before = Job.objects.filter(kind=EMBED).count()
    services.note_update(actor=owner, operation_id=op(), note_id=note.id, content=edited,
                         expected_version=1)
    with factories.tenant(owner):
        assert Job.objects.filter(kind=EMBED).count() == jobs_before + 1  # one job
    assert index_all(owner) == 1
    after = rows(owner, note.id)
    changed = [row for row in after if row[0] not in before]
    # Only the passage(s) the edit touched are new (the section's first, perhaps the one
    # after it, which carries an overlap of its end) — and only they went to the model.
    assert 1 <= len(changed) <= 2
    assert sum(FakeEmbedder.calls) == len(changed) and len(FakeEmbedder.calls) == 1
    # The rest kept their rows and vectors; every passage has a vector again.
    kept = vector_rows(owner, note.id)
    assert set(kept) == {row[0] for row in after}
    assert all(kept[row[0]] == before[row[0]] for row in after if row[0] in before)
    assert all(edited[start:end] == passage for _, _, start, end, passage, _ in after)


def test_a_memory_record_is_one_passage_and_a_short_document_too(owner):
    long_fact = " ".join(["Gravel beds hold water."] * 250)[:5990]
    fact = factories.note(owner, long_fact, kind="fact")
    short = factories.note(owner, "# Title\n\nA short document.", kind="note")
    assert [(p, s, e) for _, p, s, e, *_ in rows(owner, fact.id)] == [(1, 0, len(long_fact))]
    assert [(p, t, h) for _, p, _, _, t, h in rows(owner, short.id)] == [
        (1, "# Title\n\nA short document.", [])]


def test_a_change_of_kind_cuts_again(owner):
    text = document(3)
    note = factories.note(owner, text[:5900].strip(), kind="fact")
    assert len(rows(owner, note.id)) == 1
    services.note_update(actor=owner, operation_id=op(), note_id=note.id, kind="note",
                         expected_version=1)
    assert len(rows(owner, note.id)) > 3


def test_recall_returns_the_document_once_with_its_best_passage(owner):
    text = document(80)
    rare = "The cormorant nests below the third weir."
    marked = text.replace("## Section 57\n\n", f"## Section 57\n\n{rare} ")
    note = factories.note(owner, marked, kind="note")
    factories.note(owner, "A cormorant was seen near the harbour.", kind="fact")
    for number in range(20):  # so that the query's words are rare
        factories.note(owner, f"Ferry timetable {number}: boats leave hourly.", kind="fact")
    index_all(owner)
    result = recall(actor=owner, query="cormorant nests")
    ids = [item.note.id for item in result.data]
    assert ids.count(note.id) == 1 and result.data[0].note.id == note.id
    top = result.data[0]
    assert rare in top.note.content and len(top.note.content) <= CHUNK_CHARS
    assert top.passage is not None
    assert top.passage.headings == ["Field manual", "Section 57"]
    assert top.passage.id == f"note:{note.id}@1#{top.passage.position}"
    assert top.passage.of == len(rows(owner, note.id))
    position = top.passage.position
    start, end = rows(owner, note.id)[position - 1][2:4]
    assert marked[start:end] == top.note.content
    # A memory record is returned whole, with no passage named.
    other = result.data[1]
    assert other.passage is None and other.note.content.startswith("A cormorant")
    assert result.meta.available == 2
