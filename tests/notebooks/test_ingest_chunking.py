"""Chunk boundaries and overlap on crafted files (issue 22, `notebooks.ingest.chunking`)."""

import random

from notebooks.ingest.chunking import CHUNK_CHARS, OVERLAP_CHARS, chunk_markdown

WORDS = ("glacier moraine fjord tundra permafrost iceberg crevasse serac cirque esker "
         "drumlin kettle").split()


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def paragraph(rng: random.Random, sentences: int) -> str:
    return " ".join(sentence(rng, rng.randint(6, 14)) for _ in range(sentences))


def without_overlap(chunks):
    """The chunks' own text: each one's carried overlap removed."""
    out = [chunks[0].text]
    for before, chunk in zip(chunks, chunks[1:], strict=False):
        head = chunk.text
        for size in range(min(len(before.text), OVERLAP_CHARS + 1), 0, -1):
            if before.text.endswith(head[:size]) and head[size:size + 2] == "\n\n":
                head = head[size + 2:]
                break
        out.append(head)
    return out


def test_every_chunk_fits_and_the_text_survives_in_order():
    rng = random.Random(7)
    text = "\n\n".join(paragraph(rng, rng.randint(1, 8)) for _ in range(40))
    chunks = chunk_markdown(text)
    assert len(chunks) > 10
    assert all(len(c.text) <= CHUNK_CHARS for c in chunks)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    # Every word of the file, in order, once the overlaps are taken off.
    assert " ".join(without_overlap(chunks)).split() == text.split()
    # Chunks are full: only the last may be much shorter than the target.
    assert all(len(c.text) > CHUNK_CHARS * 0.6 for c in chunks[:-1])


def test_a_chunk_starts_with_the_end_of_the_one_before_from_a_word_boundary():
    rng = random.Random(3)
    text = "\n\n".join(paragraph(rng, 5) for _ in range(12))
    chunks = chunk_markdown(text)
    for before, chunk in zip(chunks, chunks[1:], strict=False):
        carried = chunk.text.split("\n\n", 1)[0]
        assert before.text.endswith(carried), (before.text[-200:], carried)
        assert 0 < len(carried) <= OVERLAP_CHARS
        assert before.text[-len(carried) - 1] in " \n"  # a whole word


def test_cuts_fall_between_paragraphs_when_they_can():
    rng = random.Random(11)
    paragraphs = [paragraph(rng, 3) for _ in range(20)]  # each well under the target
    chunks = chunk_markdown("\n\n".join(paragraphs))
    for own in without_overlap(chunks):
        assert set(own.split("\n\n")) <= set(paragraphs)


def test_a_long_paragraph_is_cut_between_sentences():
    rng = random.Random(5)
    sentences = [sentence(rng, 12) for _ in range(60)]
    chunks = chunk_markdown(" ".join(sentences))
    assert len(chunks) > 3
    for own in without_overlap(chunks):
        assert own.endswith("."), own[-40:]
        assert own[0].isupper()


def test_a_word_longer_than_a_chunk_is_cut_anyway():
    chunks = chunk_markdown("x" * (CHUNK_CHARS * 3))
    assert all(len(c.text) <= CHUNK_CHARS for c in chunks)
    assert "".join(without_overlap(chunks)).replace(" ", "").replace("\n", "") == "x" * (
        CHUNK_CHARS * 3)


def test_sections_start_chunks_and_carry_their_heading_trail():
    rng = random.Random(2)
    text = "\n\n".join([
        "# Field guide", paragraph(rng, 4),
        "## Ice", paragraph(rng, 8), paragraph(rng, 8),
        "### Crevasses", paragraph(rng, 8),
        "## Rock", paragraph(rng, 8),
    ])
    chunks = chunk_markdown(text)
    trails = [c.headings for c in chunks]
    assert ("Field guide",) == trails[0]
    # A heading after a well-filled chunk starts a new one, clean (no overlap).
    starts = {c.text.split("\n", 1)[0]: c for c in chunks if c.text.startswith("#")}
    assert starts["### Crevasses"].headings == ("Field guide", "Ice", "Crevasses")
    assert starts["## Rock"].headings == ("Field guide", "Rock")
    # A chunk in the middle of a section carries that section's trail.
    middle = [c for c in chunks if not c.text.startswith("#")]
    assert middle and all(c.headings[-1] in {"Field guide", "Ice", "Crevasses", "Rock"}
                          for c in middle)


def test_a_hash_inside_a_code_fence_is_not_a_heading():
    text = "# Setup\n\nRun this:\n\n```sh\n# install first\npip install grove\n```\n"
    [chunk] = chunk_markdown(text)
    assert chunk.headings == ("Setup",)
    assert "# install first" in chunk.text


def test_a_small_file_is_one_chunk_and_an_empty_one_none():
    assert [c.text for c in chunk_markdown("Just a line.")] == ["Just a line."]
    assert chunk_markdown("") == [] and chunk_markdown("\n\n  \n") == []
