"""A brief under a tight budget (SPEC §10): what it may leave out, and what it may not —
a live handoff always keeps at least its index line — and a text that never contradicts
its own counts."""

from __future__ import annotations

import re

import pytest

from notebooks.selectors.brief import brief_get
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def busy():
    """One live handoff among 40 notes changed this week."""
    owner = factories.owner()
    for n in range(40):
        factories.note(owner, f"Fact number {n}: the build uses cache layer {n} for "
                              f"artifacts of component {n}.", importance=0.9)
    handoff = factories.note(owner, "Migration: half the tables moved; next, the indexes.",
                             kind="handoff", task_id="migration")
    return owner, handoff


@pytest.mark.parametrize("budget", [200, 300, 400, 600])
def test_a_live_handoff_keeps_at_least_its_index_line(busy, budget):
    owner, handoff = busy
    brief = brief_get(actor=owner, budget_tokens=budget)
    meta = brief.meta
    assert handoff.versioned_id in meta.returned_items + meta.indexed_items, meta
    assert handoff.versioned_id in brief.markdown
    assert handoff.versioned_id not in meta.dropped_items


@pytest.mark.parametrize("budget", [200, 300, 400, 600, 2000])
def test_the_text_never_contradicts_its_counts(busy, budget):
    owner, _ = busy
    brief = brief_get(actor=owner, budget_tokens=budget)
    text, recent = brief.markdown, brief.meta.recent
    assert recent.available == 41
    if recent.available:
        assert "No notes changed." not in text
    shown = len(re.findall(r"^- \d{4}-\d\d-\d\d note:", text, re.MULTILINE))
    assert shown == recent.returned
    more = re.search(r"^- … and (\d+) more", text, re.MULTILINE)
    counted = re.search(r"^- (\d+) notes? changed", text, re.MULTILINE)
    if recent.returned == recent.available:
        assert not more and not counted
    elif recent.returned:
        assert int(more.group(1)) == recent.available - recent.returned and not counted
    else:
        assert int(counted.group(1)) == recent.available and not more


@pytest.mark.parametrize("budget", [300, 400, 600, 1000])
def test_a_tight_budget_is_spent_not_left_idle(busy, budget):
    """What the full text cannot use goes to index lines: with 41 notes to carry, a
    brief of 400 tokens used 257 before, leaving notes out. (What is left is what the
    fixed parts reserve at their longest: the footer's counts, the recent changes'
    wording.)"""
    owner, _ = busy
    meta = brief_get(actor=owner, budget_tokens=budget).meta
    assert meta.dropped > 0  # more notes than fit: the budget is the limit
    assert 0.8 * budget <= meta.tokens <= budget, meta
