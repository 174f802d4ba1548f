"""Which files ingest reads (`.groundignore`, hidden folders, types) and what it keeps of
each: private regions out before anything else, front matter tags (issue 22)."""

from pathlib import Path, PurePosixPath

from notebooks.ingest.files import Found, Skipped, walk
from notebooks.ingest.source import prepare, strip_private


def tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def outcome(root: Path) -> tuple[list[str], dict[str, str]]:
    found, skipped = [], {}
    for item in walk(root):
        if isinstance(item, Found):
            found.append(str(item.path))
        else:
            assert isinstance(item, Skipped)
            skipped[str(item.path)] = item.reason
    return found, skipped


def test_groundignore_follows_gitignore_rules(tmp_path):
    root = tree(tmp_path, {
        ".groundignore": "drafts/\n*.tmp.md\n!keep.tmp.md\n/top-only.md\n# a comment\n",
        "a.md": "a", "b.markdown": "b", "c.mdx": "c", "d.txt": "d",
        "x.tmp.md": "ignored", "keep.tmp.md": "re-included",
        "top-only.md": "anchored", "sub/top-only.md": "not the anchored one",
        "drafts/secret.md": "ignored folder", "sub/drafts/also.md": "any depth",
        "image.png": "not text", "sub/notes.md": "kept",
    })
    found, skipped = outcome(root)
    assert found == ["a.md", "b.markdown", "c.mdx", "d.txt", "keep.tmp.md",
                     "sub/notes.md", "sub/top-only.md"]
    assert skipped == {"drafts": "ignored", "image.png": "not a text note",
                       "sub/drafts": "ignored", "top-only.md": "ignored",
                       "x.tmp.md": "ignored"}


def test_a_deeper_groundignore_speaks_for_its_folder(tmp_path):
    root = tree(tmp_path, {
        ".groundignore": "*.txt\n",
        "a.txt": "ignored at the root",
        "logs/.groundignore": "!*.txt\nold/\n",
        "logs/b.txt": "re-included below",
        "logs/old/c.md": "ignored by the deeper file",
        "other/.groundignore": "c.md\n",
        "other/c.md": "ignored here",
        "c.md": "but not at the root",
    })
    found, skipped = outcome(root)
    assert found == ["c.md", "logs/b.txt"]
    assert skipped == {"a.txt": "ignored", "logs/old": "ignored", "other/c.md": "ignored"}


def test_hidden_folders_and_links_are_not_followed(tmp_path):
    root = tree(tmp_path, {".obsidian/workspace.md": "x", ".git/HEAD": "x",
                           "note.md": "x", ".hidden.md": "x"})
    (root / "link.md").symlink_to(root / "note.md")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "leak.md").write_text("outside the folder")
    (root / "elsewhere").symlink_to(outside)
    found, skipped = outcome(root)
    assert found == ["note.md"]
    assert skipped == {".git": "hidden", ".hidden.md": "hidden", ".obsidian": "hidden",
                       "elsewhere": "symbolic link", "link.md": "symbolic link"}
    assert all(isinstance(i.path, PurePosixPath) for i in walk(root))


def test_private_regions_go_first_whatever_their_case_and_lines():
    text = ("Public.\n<private>my PIN is 4821</private>\nMore.\n<PRIVATE>\nline one\n"
            "line two\n</Private> end.")
    stripped, count = strip_private(text)
    assert count == 2
    assert "4821" not in stripped and "line one" not in stripped
    assert "Public." in stripped and "More." in stripped and "end." in stripped


def test_an_unclosed_private_region_hides_the_rest_of_the_file():
    stripped, count = strip_private("Shown.\n<private>\npassword: hunter2\nand more")
    assert (stripped, count) == ("Shown.\n", 1)


def test_front_matter_gives_tags_and_leaves_the_body():
    prepared = prepare("---\ntitle: Rye\ntags: [baking, '#bread', 2024]\n---\n# Rye\n\nDough.")
    assert prepared.body == "# Rye\n\nDough."
    assert prepared.tags == ("baking", "bread", "2024")
    assert prepare("---\ntags: baking, bread  rye\n---\nx").tags == ("baking", "bread", "rye")
    assert prepare("No front matter.\n---\nnot: it").body == "No front matter.\n---\nnot: it"


def test_private_regions_inside_front_matter_are_gone_too():
    prepared = prepare("---\ntags: [a]\n<private>token: abc</private>\n---\nBody.")
    assert prepared.tags == ("a",) and prepared.private_regions == 1
    assert "abc" not in prepared.body


def test_bad_front_matter_is_dropped_with_a_warning():
    prepared = prepare("---\ntags: [unclosed\n---\nBody.")
    assert prepared.body == "Body." and prepared.tags == ()
    assert prepared.warnings == ("front matter is not YAML; ignored",)
    assert prepare("---\n- a list\n---\nBody.").warnings == (
        "front matter is not a mapping; ignored",)
