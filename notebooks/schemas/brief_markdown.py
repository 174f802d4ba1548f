"""The brief as one markdown document (SPEC §10): each part written once, for the brief's
budget (counted part by part) and for the document itself."""

from __future__ import annotations

import re
from datetime import date

from notebooks.schemas.briefs import (
    BYLINE_WEBSITE,
    BriefChange,
    BriefIndexEntry,
    BriefMeta,
    BriefNote,
    BriefTruth,
    BriefVision,
)
from notebooks.schemas.notes import known_false_words

# The brief is what an agent trusts first, and much of it is written by others: notes and
# notebook visions by any connection that may write there, connection names by whoever
# registered an app, notebook names by whoever may rename. None of it may make the
# document's own structure — a heading that passes for the account's vision, a line that
# passes for the startup note. So text from a writer is fenced (`fenced`: kept byte for
# byte inside) and names and titles are kept to one line (`one_line`).


def one_line(text: str) -> str:
    """A name or title as one line: every run of whitespace (newlines too) one space."""
    return " ".join(text.split())


def fenced(text: str) -> str:
    """Text set apart, verbatim: in a fence of tildes longer than any run of tildes in
    it (CommonMark closes a fence only with one at least as long), so nothing inside
    reads as the brief's own headings."""
    longest = max((len(run) for run in re.findall(r"~+", text)), default=0)
    fence = "~" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


def header_line(name: str, today: date, zone: str) -> str:
    return f"# Brief for {one_line(name)} — {today:%a %Y-%m-%d} ({zone})"


def _who(by: str) -> str:
    """A byline as an agent reads it: the owner's own changes say so."""
    return "the owner" if by == BYLINE_WEBSITE else one_line(by)


def vision_block(vision: BriefVision) -> str:
    where = "account" if vision.scope == "account" else one_line(vision.notebook or "")
    return (f"## Vision — {where}\n_v{vision.version}, {vision.updated:%Y-%m-%d}, by "
            f"{_who(vision.by)}_\n{fenced(vision.content)}")


def note_head(note: BriefNote) -> str:
    head = note.kind + (f" (task {one_line(note.task_id)})" if note.task_id else "")
    if note.pinned:
        head += ", pinned"
    if note.notebook is not None:
        head += f", {one_line(note.notebook)}"
    head += f", {note.updated:%Y-%m-%d}"
    if note.authority:
        head += ", declared ground truth"
    return f"### {note.id} — {head}"


TRUTH_RULES = {
    "restrict": "Only these notes answer for facts, decisions and solutions here: when "
                "they do not cover a question, say so — do not reach for another note.",
    "prioritize": "These notes come first: where another note disagrees, they win.",
}


def truth_block(truth: BriefTruth) -> str:
    """The declared set and the negatives: the owner's, unranked."""
    blocks = []
    if truth.state != "none":
        where = "the account's, inherited" if truth.state == "inherited" else "declared here"
        lines = [f"## Ground truth — {truth.policy} ({where})",
                 f"_{TRUTH_RULES[truth.policy or 'prioritize']}_"]
        for note in truth.notes:
            place = f", {one_line(note.notebook)}" if note.notebook else ""
            head = (f"- {note.id} — {note.kind}{place}, declared at v{note.declared_version}: "
                    f"{one_line(note.line)}")
            lines.append(head if note.content is None else head + "\n" + fenced(note.content))
        if truth.withheld:
            lines.append(f"_{truth.withheld} more declared notes are archived, deleted or "
                         "outside your grant._")
        blocks.append("\n".join(lines))
    if truth.negatives:
        blocks.append("## Known false (never state these as true)\n" + "\n".join(
            f"- {one_line(claim)}" for claim in truth.negatives))
    return "\n\n".join(blocks)


def note_block(note: BriefNote) -> str:
    block = f"{note_head(note)}\n{fenced(note.content)}"
    if note.known_false:
        block += f"\n_{known_false_words(note.known_false)}_"
    return block


def index_line(entry: BriefIndexEntry) -> str:
    return f"- {one_line(entry.line)} ({entry.id})"


def change_line(change: BriefChange) -> str:
    line = (f"- {change.date:%Y-%m-%d} {change.id} {change.change} ({change.kind}) by "
            f"{_who(change.by)}: {one_line(change.title)}")
    if change.known_false:
        line += f" — {known_false_words(change.known_false)}"
    return line


SECTION_TITLES: dict[str, str] = {
    "handoffs": "## Handoffs in progress",
    "facts": "## Preferences, facts and decisions",
    "related": "## Related to your focus",
    "index": "## Index (past the budget: get_note for the full text)",
}
NOTHING_RECENT = "No notes changed."


def recent_title(since: date) -> str:
    return f"## Recent changes since {since:%Y-%m-%d}"


def recent_more(more: int, *, shown: int) -> str:
    """The changes past the lines shown — or, none shown, how many there are."""
    if shown:
        return f"- … and {more} more (recent_activity lists them all)"
    return f"- {more} {_noun(more, 'note')} changed (recent_activity lists them all)"


def _noun(count: int, word: str) -> str:
    return word if count == 1 else word + "s"


def footer(meta: BriefMeta, *, wordy: bool = False) -> str:
    """The counts. `wordy` says "of the N tokens", one token longer: a count whose digits
    take a token fewer than its neighbour's can have no exact statement otherwise (the
    footer saying 949 counts 950, saying 950 counts 949)."""
    parts = [f"{meta.returned} {_noun(meta.returned, 'note')} in full",
             f"{meta.indexed} as index {_noun(meta.indexed, 'line')}"]
    if meta.dropped:
        # Over the budget, or past the brief's windows (the newest handoffs, the best
        # of each kind): `droppedItems` names the first, `droppedUnlisted` counts the rest.
        parts.append(f"{meta.dropped} left out (list_notes finds them)")
    of = "of the" if wordy else "of"
    return (f"---\n_{', '.join(parts)}; about {meta.tokens} {of} {meta.budget_tokens} tokens "
            f"({meta.tokenizer})._")


def brief_markdown(*, header: str, startup: str, visions: list[BriefVision],
                   recent: list[BriefChange], recent_available: int, since: date,
                   notes: list[BriefNote], index: list[BriefIndexEntry],
                   truth: BriefTruth | None = None, meta_footer: str = "") -> str:
    """The brief as one markdown document: header, startup line, visions, handoffs,
    recent changes, facts, related notes, the index, and the counts."""
    blocks = [header, startup]
    blocks += [vision_block(v) for v in visions]
    if truth is not None and (truth_text := truth_block(truth)):
        blocks.append(truth_text)
    handoffs = [n for n in notes if n.section == "handoffs"]
    if handoffs:
        blocks.append(SECTION_TITLES["handoffs"])
        blocks += [note_block(n) for n in handoffs]
    recent_lines = [change_line(c) for c in recent]
    if recent_available > len(recent):
        recent_lines.append(recent_more(recent_available - len(recent), shown=len(recent)))
    recent_lines = recent_lines or [NOTHING_RECENT]  # only when nothing changed at all
    blocks.append(recent_title(since) + "\n" + "\n".join(recent_lines))
    for section in ("facts", "related"):
        chosen = [n for n in notes if n.section == section]
        if chosen:
            blocks.append(SECTION_TITLES[section])
            blocks += [note_block(n) for n in chosen]
    if index:
        blocks.append(SECTION_TITLES["index"] + "\n"
                      + "\n".join(index_line(e) for e in index))
    if meta_footer:
        blocks.append(meta_footer)
    return "\n\n".join(blocks) + "\n"
