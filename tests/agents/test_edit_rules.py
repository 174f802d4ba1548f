"""What each partial edit does to a text (`notebooks.edits`), and the refusals that
name why: the rules alone, on texts shaped like real notes."""

from __future__ import annotations

import pytest

from grove.kernel.errors import Conflict, Invalid
from notebooks.edits import apply_edit, clean_edit

DOC = """---
tags: [plan]
---
# Launch plan

Intro line.

## Status

Waiting on legal.

### Blockers

- contract

## Next

```sh
# not a heading
make release
```

Ship it.
"""


def edit(note: str, /, **given) -> str:
    return apply_edit(note, clean_edit(given))


def test_append_and_prepend_add_a_block_and_keep_front_matter_first():
    assert edit("# Log\n\n- one", op="append", text="- two") == "# Log\n\n- one\n\n- two"
    prepended = edit(DOC, op="prepend", text="> Draft")
    assert prepended.startswith("---\ntags: [plan]\n---\n> Draft\n\n# Launch plan\n")
    assert edit("Body.", op="prepend", text="Top.\n") == "Top.\n\nBody."


def test_replace_section_replaces_the_body_up_to_the_next_heading_of_its_level():
    out = edit(DOC, op="replace_section", heading="Status", text="Signed on Monday.")
    assert "## Status\n\nSigned on Monday.\n\n## Next\n" in out
    assert "Blockers" not in out and "Waiting on legal" not in out  # its subsections go too
    assert out.endswith("make release\n```\n\nShip it.\n")  # the rest is untouched


def test_a_subsection_alone_and_the_last_section_and_the_level_given():
    sub = edit(DOC, op="replace_section", heading="### blockers", text="- none")
    assert "### Blockers\n\n- none\n\n## Next" in sub and "Waiting on legal." in sub
    last = edit(DOC, op="replace_section", heading="  next ", text="Done.")
    assert last.endswith("## Next\n\nDone.\n") and "make release" not in last
    emptied = edit(DOC, op="replace_section", heading="Next", text="")
    assert emptied.endswith("## Next\n")


def test_a_hash_line_in_a_code_fence_or_front_matter_is_no_heading():
    with pytest.raises(Conflict) as absent:
        edit(DOC, op="replace_section", heading="not a heading", text="x")
    assert absent.value.code == "edit_target_not_found"
    assert absent.value.details["headings"] == ["# Launch plan", "## Status", "### Blockers",
                                                "## Next"]
    with pytest.raises(Conflict):
        edit(DOC, op="replace_section", heading="tags: [plan]", text="x")


def test_setext_headings_and_an_ambiguous_heading():
    text = "Title\n=====\n\nA\n\nPart\n----\n\nB\n\n## Part\n\nC"
    with pytest.raises(Conflict) as ambiguous:
        edit(text, op="replace_section", heading="Part", text="x")
    assert ambiguous.value.code == "edit_target_ambiguous"
    assert ambiguous.value.details["lines"] == [6, 11]
    assert edit(text, op="replace_section", heading="Title", text="Z") == "Title\n=====\n\nZ\n"


def test_replace_text_needs_exactly_one_place():
    assert edit("Price: 10 EUR.", op="replace_text", find="10", text="12") == "Price: 12 EUR."
    assert edit("a b c", op="replace_text", find=" b", text="") == "a c"
    with pytest.raises(Conflict) as absent:
        edit("Price: 10 EUR.", op="replace_text", find="11", text="12")
    assert (absent.value.code, absent.value.details["find"]) == ("edit_target_not_found", "11")
    with pytest.raises(Conflict) as twice:
        edit("one\ntwo one\n\none", op="replace_text", find="one", text="1")
    assert twice.value.code == "edit_target_ambiguous"
    assert twice.value.details["lines"] == [1, 2, 4]


@pytest.mark.parametrize("given", [
    {"op": "rewrite", "text": "x"},
    {"op": "append", "text": "  "},
    {"op": "append", "text": 3},
    {"op": "replace_section", "text": "x"},
    {"op": "replace_section", "heading": " ", "text": "x"},
    {"op": "replace_text", "find": "", "text": "x"},
    {"op": "replace_text", "text": "x", "find": "a", "heading": "b"},
    {"op": "append", "text": "x", "find": "a"},
    "append",
])
def test_malformed_edits_are_refused_by_code(given):
    with pytest.raises(Invalid) as refused:
        clean_edit(given)
    assert refused.value.code == "invalid_edit"
