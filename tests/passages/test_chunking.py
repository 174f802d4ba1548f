"""Passages as spans of a note's text (`passages.chunking`): the cutting rules of
the ingest chunker of issue 22, with offsets into the text as given. Pure Python: no
database, no Django."""

from __future__ import annotations

import random

import pytest

from passages.chunking import (
    CHUNK_CHARS,
    HEADING_BREAK_CHARS,
    OVERLAP_CHARS,
    Span,
    cut,
)

WORDS = ("glacier moraine fjord tundra permafrost iceberg crevasse serac cirque esker "
         "drumlin kettle").split()
# Accents, Greek, CJK, and emoji made of several code points (a ZWJ sequence, a
# variation selector): offsets are str indices, one per code point.
WORLD_WORDS = ("café déjà été naïve ñandú Ωμέγα 東京 雨の日 氷河 🌧️ 👩‍🔬 🧊 "
               "glacier fjord").split()


def sentence(rng: random.Random, words: int, vocabulary=WORDS) -> str:
    return " ".join(rng.choice(vocabulary) for _ in range(words)).capitalize() + "."


def paragraph(rng: random.Random, sentences: int, vocabulary=WORDS) -> str:
    return " ".join(sentence(rng, rng.randint(6, 14), vocabulary) for _ in range(sentences))


def paragraph_between(rng: random.Random, low: int, high: int) -> str:
    while True:
        text = paragraph(rng, rng.randint(1, 10))
        if low <= len(text) <= high:
            return text


def assemble(blocks: list[str], sep: str = "\n\n") -> tuple[str, list[int]]:
    """The blocks joined with `sep`, and where each one starts (counted, not searched)."""
    starts, at = [], 0
    for block in blocks:
        starts.append(at)
        at += len(block) + len(sep)
    return sep.join(blocks), starts


def own_start(text: str, spans: list[Span], i: int) -> int:
    """Where span i's own text begins: after the overlap it carries from span i - 1."""
    span = spans[i]
    if i == 0 or span.start >= spans[i - 1].end:
        return span.start
    at = spans[i - 1].end
    while text[at].isspace():
        at += 1
    return at


def own_texts(text: str, spans: list[Span]) -> list[str]:
    return [text[own_start(text, spans, i):span.end] for i, span in enumerate(spans)]


def check(text: str, spans: list[Span], *, size: int = CHUNK_CHARS,
          overlap: int = OVERLAP_CHARS, headings: frozenset[int] = frozenset()) -> None:
    """What every cut promises; `headings` are the offsets where headings start."""
    assert [span.index for span in spans] == list(range(len(spans)))
    covered = bytearray(len(text))
    for i, span in enumerate(spans):
        assert 0 <= span.start < span.end <= len(text)
        assert span.end - span.start <= size
        passage = text[span.start:span.end]
        assert passage == passage.strip(), (i, passage[:40], passage[-40:])
        covered[span.start:span.end] = b"\x01" * (span.end - span.start)
        if i == 0:
            continue
        before = spans[i - 1]
        assert before.start < span.start and before.end < span.end
        shared = before.end - span.start
        if shared > 0:
            assert shared <= overlap, (i, shared)
            assert text[span.start - 1].isspace()  # the overlap starts a word
        # A span whose own text opens a section starts clean, at the heading.
        assert own_start(text, spans, i) not in headings or shared <= 0
    lost = [at for at, char in enumerate(text) if not covered[at] and not char.isspace()]
    assert not lost, [text[at - 10:at + 10] for at in lost[:3]]


def test_every_span_fits_and_the_text_survives_in_order():
    rng = random.Random(7)
    text = "\n\n".join(paragraph(rng, rng.randint(1, 8)) for _ in range(40))
    spans = cut(text)
    assert len(spans) > 10
    check(text, spans)
    # Every word of the text, in order, once the overlaps are taken off.
    assert " ".join(own_texts(text, spans)).split() == text.split()
    # Spans are full: only the last may be much shorter than the target.
    assert all(span.end - span.start > CHUNK_CHARS * 0.6 for span in spans[:-1])
    assert all(span.headings == () for span in spans)


def test_a_span_starts_with_the_end_of_the_one_before_from_a_word_boundary():
    rng = random.Random(3)
    text = "\n\n".join(paragraph(rng, 5) for _ in range(12))
    spans = cut(text)
    assert len(spans) > 3
    for before, span in zip(spans, spans[1:], strict=False):
        assert 0 < before.end - span.start <= OVERLAP_CHARS
        assert text[span.start - 1] in " \n" and text[span.start] not in " \n"


def test_cuts_fall_between_paragraphs_when_they_can():
    rng = random.Random(11)
    paragraphs = [paragraph(rng, 3) for _ in range(20)]  # each well under the target
    text, starts = assemble(paragraphs)
    ends = {start + len(p) for start, p in zip(starts, paragraphs, strict=True)}
    spans = cut(text)
    assert len(spans) > 2
    check(text, spans)
    for i, span in enumerate(spans):
        assert span.end in ends
        assert own_start(text, spans, i) in starts


def test_a_long_paragraph_is_cut_between_sentences():
    rng = random.Random(5)
    text = " ".join(sentence(rng, 12) for _ in range(60))
    spans = cut(text)
    assert len(spans) > 3
    check(text, spans)
    for own in own_texts(text, spans):
        assert own.endswith("."), own[-40:]
        assert own[0].isupper()


def test_a_word_longer_than_a_span_is_cut_anywhere():
    word = "x" * (CHUNK_CHARS * 3)
    spans = cut(word)
    check(word, spans)
    # No space to start an overlap at: the pieces simply follow one another.
    assert [s.start for s in spans[1:]] == [s.end for s in spans[:-1]]
    assert "".join(word[s.start:s.end] for s in spans) == word

    text = f"Before the word. {'y' * 3000} after the word."
    spans = cut(text)
    check(text, spans)
    assert text[spans[0].start:spans[0].end].startswith("Before the word.")
    assert text[spans[-1].start:spans[-1].end].endswith("after the word.")


def test_sections_start_clean_spans_with_their_heading_trail():
    rng = random.Random(2)
    # Every body paragraph is at least HEADING_BREAK_CHARS long and fits a passage, so
    # each heading comes after a passage full enough to end there.
    layout = [
        ("# Field guide", ("Field guide",)),
        ("## Ice", ("Field guide", "Ice")),
        ("### Crevasses", ("Field guide", "Ice", "Crevasses")),
        ("### Seracs", ("Field guide", "Ice", "Seracs")),
        ("## Rock", ("Field guide", "Rock")),
        ("# Appendix", ("Appendix",)),
        ("### Sources", ("Appendix", "Sources")),  # a skipped level
    ]
    blocks, trails = [], []
    for heading, trail in layout:
        blocks.append(heading)
        trails.append(trail)
        for _ in range(rng.randint(1, 3)):
            blocks.append(paragraph_between(rng, HEADING_BREAK_CHARS, 1000))
            trails.append(trail)
    text, starts = assemble(blocks)
    heading_starts = {starts[i]: trails[i] for i, b in enumerate(blocks) if b[0] == "#"}
    spans = cut(text)
    check(text, spans, headings=frozenset(heading_starts))
    by_start = {span.start: span for span in spans}
    for at, trail in heading_starts.items():
        assert at in by_start, text[at:at + 20]  # a heading opens a span ...
        assert by_start[at].headings == trail  # ... under its own trail
    # A span in the middle of a section carries that section's trail.
    for i, span in enumerate(spans):
        at = own_start(text, spans, i)
        block = max(b for b, start in enumerate(starts) if start <= at)
        assert span.headings == trails[block]
    assert any(span.start not in heading_starts for span in spans)


def test_a_small_section_shares_a_span_with_the_next():
    rng = random.Random(4)
    text = "\n\n".join(["# One", "A short section.", "## Two",
                        paragraph_between(rng, 800, 1000), paragraph_between(rng, 800, 1000)])
    spans = cut(text)
    check(text, spans, headings=frozenset({0, text.index("## Two")}))
    assert spans[0].start == 0 and spans[0].headings == ("One",)
    assert text.index("## Two") < spans[0].end  # "## Two" did not end the passage
    assert spans[1].headings == ("One", "Two")


def test_a_heading_that_does_not_fit_opens_a_clean_span():
    # The passage before holds less than HEADING_BREAK_CHARS, but the heading does not
    # fit after it: the span it opens still carries no overlap.
    rng = random.Random(15)
    heading = "# " + "Moraine " * 9 + "end"
    first = "Short words here, and a few."
    text, starts = assemble([first, heading, paragraph(rng, 3)])
    assert len(first) < 100 // 3 and len(first) + 2 + len(heading) > 100
    spans = cut(text, size=100, overlap=20)
    check(text, spans, size=100, overlap=20, headings=frozenset({starts[1]}))
    assert (spans[0].end, spans[1].start) == (len(first), starts[1])
    assert spans[1].headings == (heading[2:],)


def test_a_hash_inside_a_code_fence_is_not_a_heading():
    text = "# Setup\n\nRun this:\n\n```sh\n# install first\npip install grove\n```\n"
    [span] = cut(text)
    assert span.headings == ("Setup",)
    assert (span.start, span.end) == (0, len(text.rstrip()))

    rng = random.Random(8)
    fence = "```sh\n" + "\n".join(f"# step {n}\necho {n}" for n in range(30)) + "\n```"
    text = "\n\n".join(["# Setup", paragraph(rng, 8), fence, paragraph(rng, 8)])
    spans = cut(text, size=300, overlap=60)
    check(text, spans, size=300, overlap=60, headings=frozenset({0}))
    assert len(spans) > 5
    assert all(span.headings == ("Setup",) for span in spans)


def test_a_short_text_is_one_span_of_its_trimmed_text():
    assert cut("Just a line.") == [Span(index=0, start=0, end=12, headings=())]
    assert cut("\n\n  Just a line. \n") == [Span(index=0, start=4, end=16, headings=())]
    # Even with headings, and even when a heading comes after HEADING_BREAK_CHARS.
    rng = random.Random(6)
    text = "\n\n".join(["# Notes", paragraph_between(rng, 450, 600), "## More", "End."])
    assert len(text) <= CHUNK_CHARS
    assert cut(text) == [Span(index=0, start=0, end=len(text), headings=("Notes",))]
    # Exactly `size` characters is one span; one more is not.
    line = "word " * 40
    assert cut(line.strip(), size=199) == [Span(index=0, start=0, end=199, headings=())]
    assert len(cut(line.strip() + "s", size=199)) > 1


def test_an_empty_text_has_no_spans():
    assert cut("") == []
    assert cut("\n\n  \n") == []
    assert cut("\t\r\n \u2028") == []


def test_front_matter_is_a_block_without_a_trail():
    rng = random.Random(9)
    front = "---\ntitle: Ice\n---"
    # Read as markdown, "title: Ice" over "---" would be a setext heading.
    text = "\n\n".join([front, paragraph(rng, 10), paragraph(rng, 10)])
    spans = cut(text)
    assert len(spans) > 1
    check(text, spans)
    assert spans[0].start == 0
    assert all(span.headings == () for span in spans)
    # A short note with front matter: one span, its trail that of the front matter.
    assert cut(front + "\n\n# Intro\n\nHello.") == [
        Span(index=0, start=0, end=len(front) + 17, headings=())]

    # Front matter is one block: it is not cut, and a heading after it (once it fills
    # HEADING_BREAK_CHARS) opens a clean span.
    keys = "\n".join(f"key{n}: a value of some length, {n}." for n in range(20))
    front = f"---\n{keys}\n..."
    intro = paragraph(rng, 12)
    text = "\n\n".join([front, "# Intro", intro])
    spans = cut(text)
    check(text, spans, headings=frozenset({len(front) + 2}))
    assert (spans[0].start, spans[0].end, spans[0].headings) == (0, len(front), ())
    assert spans[1].start == len(front) + 2 and spans[1].headings == ("Intro",)

    # A `---` that is never closed is markdown (a thematic break), not front matter.
    text = "---\nname: Ice\n\n" + paragraph(rng, 12)
    spans = cut(text)
    check(text, spans)


def test_crlf_line_endings_give_offsets_into_the_text_as_given():
    rng = random.Random(12)
    blocks = ["# Field guide", paragraph(rng, 6), "## Ice",
              "- one item\r\n- two items\r\n- three", paragraph(rng, 6),
              "```\r\n# not a heading\r\n```", "## Rock", paragraph(rng, 6)]
    text, starts = assemble(blocks, sep="\r\n\r\n")
    text += "\r\n"
    headings = {starts[0]: ("Field guide",), starts[2]: ("Field guide", "Ice"),
                starts[6]: ("Field guide", "Rock")}
    spans = cut(text, size=400, overlap=80)
    check(text, spans, size=400, overlap=80, headings=frozenset(headings))
    by_start = {span.start: span for span in spans}
    for at, trail in headings.items():
        assert by_start[at].headings == trail
    assert not any("not a heading" in " ".join(span.headings) for span in spans)


def test_line_separators_that_markdown_does_not_break_at_keep_offsets_right():
    # str.splitlines breaks at \u2028, \x0c, \x85 and lone \r counts as a break for
    # markdown too; a line table built the wrong way would shift every later offset.
    rng = random.Random(13)
    odd = f"{paragraph(rng, 2)}\u2028{paragraph(rng, 2)}\x0c{paragraph(rng, 2)}\x85end."
    # The paragraph before "## Two" fits a piece and fills HEADING_BREAK_CHARS of a
    # 300-character span: the heading opens a span of its own.
    blocks = ["# One", odd, "Lone\rreturn line.", paragraph_between(rng, 120, 240), "## Two",
              paragraph(rng, 3)]
    text, starts = assemble(blocks)
    spans = cut(text, size=300, overlap=50)
    check(text, spans, size=300, overlap=50, headings=frozenset({starts[0], starts[4]}))
    [two] = [span for span in spans if span.start == starts[4]]
    assert two.headings == ("One", "Two")
    assert text[two.start:two.end].startswith("## Two\n\n")


def test_a_long_document_keeps_each_span_under_its_section():
    rng = random.Random(21)
    blocks: list[str] = []
    trails: list[tuple[str, ...]] = []
    trail: tuple[str, ...] = ()
    number = 0
    while sum(map(len, blocks)) < 150_000:
        number += 1
        level = rng.randint(1, min(len(trail) + 1, 4))
        trail = (*trail[:level - 1], f"Section {number}")
        blocks.append(f"{'#' * level} Section {number}")
        trails.append(trail)
        for _ in range(rng.randint(1, 6)):
            kind = rng.random()
            if kind < 0.1:
                block = f"```\n# Not section {number}\n```"
            elif kind < 0.2:
                block = "\n".join(f"- {sentence(rng, 8)}" for _ in range(rng.randint(2, 30)))
            else:
                block = paragraph(rng, rng.randint(1, 12))
            blocks.append(block)
            trails.append(trail)
    text, starts = assemble(blocks)
    assert len(text) >= 150_000
    spans = cut(text)
    headings = frozenset(starts[i] for i, b in enumerate(blocks) if b.startswith("#"))
    check(text, spans, headings=headings)
    assert len(spans) > 100
    block = 0
    for i, span in enumerate(spans):
        at = own_start(text, spans, i)
        while block + 1 < len(starts) and starts[block + 1] <= at:
            block += 1
        assert span.headings == trails[block], (i, text[at:at + 40])


def test_non_ascii_offsets_are_str_indices():
    rng = random.Random(17)
    blocks = ["# Été 🌞", paragraph(rng, 5, WORLD_WORDS), "## Café ☕ 東京",
              paragraph(rng, 5, WORLD_WORDS), "氷河" * 200, "## Ωμέγα 👩‍🔬",
              paragraph(rng, 5, WORLD_WORDS)]
    text, starts = assemble(blocks)
    headings = {starts[0]: ("Été 🌞",), starts[2]: ("Été 🌞", "Café ☕ 東京"),
                starts[5]: ("Été 🌞", "Ωμέγα 👩‍🔬")}
    spans = cut(text, size=200, overlap=40)
    check(text, spans, size=200, overlap=40, headings=frozenset(headings))
    by_start = {span.start: span for span in spans}
    for at, trail in headings.items():
        assert by_start[at].headings == trail
    # The CJK run has no space to cut at: it is cut anywhere, with no overlap.
    first, last = starts[4], starts[4] + 400
    parts = [text[max(s.start, first):min(s.end, last)] for s in spans
             if s.start < last and s.end > first]
    assert len(parts) > 2 and "".join(parts) == "氷河" * 200

    # 16 code points: "🌧️" is two (the cloud and a variation selector).
    assert len("«Ça va?» — 東京 🌧️") == 16
    assert cut("  «Ça va?» — 東京 🌧️ ") == [Span(index=0, start=2, end=18, headings=())]


MARKDOWN_SHAPES = (
    lambda rng: paragraph(rng, rng.randint(1, 6)),
    lambda rng: f"{'#' * rng.randint(1, 6)} {sentence(rng, 3)}",
    lambda rng: f"{sentence(rng, 3)}\n{'=' * 5}",  # a setext heading
    lambda rng: "\n".join(f"{n}. {sentence(rng, 10)}" for n in range(1, rng.randint(2, 12))),
    lambda rng: "> " + paragraph(rng, 3) + "\n>\n> " + paragraph(rng, 2),
    lambda rng: "```python\n# comment\n" + "x = 1\n" * rng.randint(1, 40) + "```",
    lambda rng: "    indented code\n    " + sentence(rng, 20),
    lambda rng: "| a | b |\n|---|---|\n" + "| cell | more cell |\n" * rng.randint(1, 30),
    lambda rng: f"[ref{rng.randint(1, 99)}]: https://example.com/{rng.choice(WORDS)}",
    lambda rng: "<div>\n" + sentence(rng, 12) + "\n</div>",
    lambda rng: "***",
    lambda rng: rng.choice(WORDS) * rng.randint(50, 400),  # a giant word
)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize(("size", "overlap"),
                         [(1200, 150), (300, 60), (80, 0), (40, 30), (7, 3), (1, 0)])
def test_any_markdown_is_covered_by_ordered_trimmed_spans(seed, size, overlap):
    rng = random.Random(seed)
    blocks = [rng.choice(MARKDOWN_SHAPES)(rng) for _ in range(rng.randint(5, 40))]
    if seed % 3 == 0:
        blocks.insert(0, "---\ntitle: x\n---")
    sep = rng.choice(["\n\n", "\r\n\r\n", "\n\n\n  \n"])
    newline = "\r\n" if "\r" in sep else "\n"
    text, _ = assemble([block.replace("\n", newline) for block in blocks], sep=sep)
    check(text, cut(text, size=size, overlap=overlap), size=size, overlap=overlap)


def test_link_reference_definitions_are_kept():
    # markdown-it makes no token for them; their lines are still part of a span.
    rng = random.Random(14)
    text = "\n\n".join([paragraph(rng, 8), "[grove]: https://example.com/grove",
                       paragraph(rng, 8)])
    spans = cut(text, size=500, overlap=50)
    check(text, spans, size=500, overlap=50)
    assert any("[grove]: https://example.com/grove" in text[s.start:s.end] for s in spans)


def test_size_and_overlap_must_make_sense():
    with pytest.raises(ValueError, match="size"):
        cut("text", size=0)
    with pytest.raises(ValueError, match="overlap"):
        cut("text", overlap=-1)
