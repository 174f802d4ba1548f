"""The library's bulk bar and drag and drop in real Chromium, under the real CSP (never
bypassed): ticking (click, Shift+click, keyboard), a batch move and its Undo, rows
dropped onto the sidebar, the path without JavaScript, and the bar on a phone and in
the dark scheme. Chromium logs CSP violations as console errors, which fail a test."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from notebooks import services
from tests import factories
from tests.browser import sign_in, watch_console
from tests.factories import op
from tests.notebooks.test_agents_browser import _owner
from tests.notebooks.test_walk_fixes_browser import CONTRASTS

pytestmark = pytest.mark.slow

ROWS = "ol.notes > li.note"


def row(page: Page, note) -> object:
    return page.locator(f"#note-{note.id}")


def test_tick_with_click_and_shift_click_then_move_and_undo(browser_site: str, page: Page):
    owner = _owner("bulk-mover")
    work = factories.notebook(owner, "Work")
    notes = [factories.note(owner, f"Note {n}") for n in range(6)]  # newest first: 5 … 0
    errors = watch_console(page)
    sign_in(page, browser_site, "bulk-mover")
    bar = page.locator("#bulk")
    expect(bar).to_be_hidden()
    boxes = page.locator(f"{ROWS} > input.pick")
    boxes.nth(0).click()
    expect(bar).to_be_visible()
    expect(bar.locator("[data-bulk-count]")).to_have_text("1 selected")
    boxes.nth(2).click()
    boxes.nth(4).click(modifiers=["Shift"])  # ticks 2, 3 and 4
    expect(bar.locator("[data-bulk-count]")).to_have_text("4 selected")
    expect(page.locator(f"{ROWS}.picked")).to_have_count(4)
    expect(boxes.nth(1)).not_to_be_checked()
    expect(boxes.nth(3)).to_be_checked()

    # A note changed behind the page's back stops the move: a batch moves all its notes
    # or none (SPEC §3), and the message says which and why.
    changed = notes[5 - 3]
    services.note_update(actor=owner, operation_id=op(), note_id=changed.id, content="Moved on")
    bar.get_by_label("Move to").select_option(label="Work")
    bar.get_by_role("button", name="Move", exact=True).click()
    flash = page.locator(".flash")
    expect(flash).to_have_text([
        "Nothing was moved: a batch moves all its notes or none, and 3 notes could have. "
        "1 note changed meanwhile and was left as it was."])
    expect(page).to_have_url(browser_site + "/")
    assert all(factories.note_row(owner, n.id).notebook_id is None for n in notes)
    expect(bar).to_be_hidden()  # a fresh page: nothing ticked

    # Ticked again on the fresh page (the changed note is at the top now), they move.
    for note in (notes[5], notes[3], changed, notes[1]):
        row(page, note).locator("input.pick").click()
    expect(bar.locator("[data-bulk-count]")).to_have_text("4 selected")
    bar.get_by_label("Move to").select_option(label="Work")
    bar.get_by_role("button", name="Move", exact=True).click()
    expect(flash).to_have_text(["Moved 4 notes to Work. Undo"])
    moved = {n.id for n in notes if factories.note_row(owner, n.id).notebook_id == work.id}
    assert moved == {notes[5].id, notes[3].id, notes[2].id, notes[1].id}

    flash.get_by_role("button", name="Undo").click()
    expect(page.locator(".flash")).to_have_text("Undone: 4 notes are back as they were.")
    assert all(factories.note_row(owner, n.id).notebook_id is None for n in notes)
    assert errors == []


def test_keyboard_ticks_extends_and_clears(browser_site: str, page: Page):
    owner = _owner("bulk-keys")
    for n in range(5):
        factories.note(owner, f"Keyed {n}")
    errors = watch_console(page)
    sign_in(page, browser_site, "bulk-keys")
    rows = page.locator(ROWS)
    count = page.locator("#bulk [data-bulk-count]")
    page.locator("body").click(position={"x": 5, "y": 300})
    page.keyboard.press("j")
    page.keyboard.press("x")
    expect(count).to_have_text("1 selected")
    page.keyboard.press("Shift+J")
    page.keyboard.press("Shift+J")
    expect(count).to_have_text("3 selected")
    expect(rows.nth(2)).to_have_class(re.compile(r"\bselected\b"))
    expect(rows.nth(2).locator("a.title")).to_be_focused()
    page.keyboard.press("x")  # unticks the one selected
    expect(count).to_have_text("2 selected")
    page.keyboard.press("j")  # j/k go on working with the focus in the list
    page.keyboard.press("x")
    expect(count).to_have_text("3 selected")
    # A box clicked keeps the focus: the keys still work there.
    rows.nth(0).locator("input.pick").click()
    expect(count).to_have_text("2 selected")
    page.keyboard.press("x")
    expect(count).to_have_text("3 selected")
    page.locator("#bulk").get_by_role("button", name="Select all").click()
    expect(count).to_have_text("5 selected")
    page.keyboard.press("Escape")
    expect(page.locator("#bulk")).to_be_hidden()
    expect(page.locator(f"{ROWS} > input.pick:checked")).to_have_count(0)
    page.keyboard.press("?")
    expect(page.locator("dialog#shortcuts")).to_contain_text("Tick or untick the selected note")
    assert errors == []


def test_drag_rows_onto_a_notebook_in_the_sidebar(browser_site: str, page: Page):
    owner = _owner("bulk-dragger")
    garden = factories.notebook(owner, "Garden")
    shed = factories.notebook(owner, "Shed", parent=garden.id)
    one = factories.note(owner, "Figs like sun.")
    two = factories.note(owner, "Tomatoes need stakes.")
    three = factories.note(owner, "Rake the leaves.")
    errors = watch_console(page)
    sign_in(page, browser_site, "bulk-dragger")

    # One row, not ticked: it alone moves; the notebook lights up under it.
    target = page.locator(f'.sidebar li[data-notebook="{garden.id}"] > details > summary > '
                          "a.notebook")
    row(page, one).locator("a.title").hover()
    page.mouse.down()
    target.hover()
    target.hover(position={"x": 20, "y": 8})
    expect(target).to_have_class(re.compile(r"\bdrop-target\b"))
    page.mouse.up()
    expect(page.locator(".flash")).to_have_text("Moved 1 note to Garden. Undo")
    assert factories.note_row(owner, one.id).notebook_id == garden.id

    # A ticked row brings the other ticked rows with it — onto a sub-notebook.
    row(page, two).locator("input.pick").check()
    row(page, three).locator("input.pick").check()
    row(page, two).drag_to(page.locator(f'.sidebar li[data-notebook="{shed.id}"] a.notebook'))
    expect(page.locator(".flash")).to_have_text("Moved 2 notes to Shed. Undo")
    assert {factories.note_row(owner, n.id).notebook_id for n in (two, three)} == {shed.id}

    # Into Personal, from a notebook's own list (the address is kept).
    page.goto(f"{browser_site}/?notebook={shed.id}")
    row(page, three).drag_to(page.locator(".sidebar a[data-drop=personal]"))
    expect(page.locator(".flash")).to_have_text("Moved 1 note to Personal. Undo")
    expect(page).to_have_url(f"{browser_site}/?notebook={shed.id}")
    expect(page.locator(ROWS)).to_have_count(1)
    assert factories.note_row(owner, three.id).notebook_id is None
    assert errors == []


def test_search_then_tag_and_delete_keep_the_address(browser_site: str, page: Page):
    owner = _owner("bulk-tagger")
    for n in range(3):
        factories.note(owner, f"Walnut recipe {n}")
    factories.note(owner, "Something else")
    errors = watch_console(page)
    sign_in(page, browser_site, "bulk-tagger")
    page.keyboard.press("/")
    page.keyboard.type("walnut")
    expect(page.locator("#count")).to_contain_text("Showing 3 of 3 notes matching")
    page.locator(f"{ROWS} > input.pick").first.check()
    page.locator("#bulk").get_by_role("button", name="Select all").click()
    expect(page.locator("#bulk [data-bulk-count]")).to_have_text("3 selected")
    page.locator("#bulk").get_by_label("Tag").fill("Baking")
    page.locator("#bulk").get_by_label("Tag").press("Enter")  # Enter adds the tag
    expect(page.locator(".flash")).to_have_text("Tagged 3 notes “Baking”. Undo")
    expect(page).to_have_url(re.compile(r"/\?q=walnut&kind="))  # the search kept
    page.locator(f"{ROWS} > input.pick").first.check()
    page.locator("#bulk").get_by_role("button", name="Delete").click()
    expect(page.locator(".flash")).to_have_text("Deleted 1 note. Undo · Recently deleted")
    expect(page.locator("#count")).to_contain_text("Showing 2 of 2 notes matching")
    page.locator(".flash").get_by_role("button", name="Undo").click()
    expect(page.locator("#count")).to_contain_text("Showing 3 of 3 notes matching")
    assert errors == []


def test_without_javascript_the_boxes_and_the_bar_still_move_notes(browser_site: str,
                                                                     browser):
    owner = _owner("bulk-nojs")
    work = factories.notebook(owner, "Work")
    notes = [factories.note(owner, f"Plain {n}") for n in range(3)]
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        sign_in(page, browser_site, "bulk-nojs")
        expect(page.locator("#bulk")).to_be_hidden()
        page.locator(f"{ROWS} > input.pick").nth(0).check()
        page.locator(f"{ROWS} > input.pick").nth(1).check()
        expect(page.locator("#bulk")).to_be_visible()  # the stylesheet shows it
        page.locator("#bulk").get_by_label("Move to").select_option(label="Work")
        page.locator("#bulk").get_by_role("button", name="Move", exact=True).click()
        expect(page.locator(".flash")).to_have_text("Moved 2 notes to Work. Undo")
        assert sum(factories.note_row(owner, n.id).notebook_id == work.id
                   for n in notes) == 2
        page.locator(".flash").get_by_role("button", name="Undo").click()
        expect(page.locator(".flash")).to_have_text("Undone: 2 notes are back as they were.")
    finally:
        context.close()


@pytest.mark.parametrize("scheme", ["dark", "light"])
def test_the_bar_fits_a_phone_and_its_buttons_are_readable(browser_site: str, browser,
                                                            scheme: str):
    owner = _owner(f"bulk-phone-{scheme}")
    factories.notebook(owner, "A notebook with a rather long name indeed")
    for n in range(3):
        factories.note(owner, f"Note {n} " + "word " * 30)
    context = browser.new_context(color_scheme=scheme, viewport={"width": 375, "height": 740})
    page = context.new_page()
    errors = watch_console(page)
    try:
        sign_in(page, browser_site, f"bulk-phone-{scheme}")
        page.locator(f"{ROWS} > input.pick").first.check()
        expect(page.locator("#bulk")).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= 375
        measured = page.evaluate(CONTRASTS)
        names = {text for text, _ in measured}
        assert {"Add tag", "Remove tag", "Move", "Archive", "Delete", "Select all",
                "Clear"} <= names, names
        low = [m for m in measured if m[1] < 4.5]
        assert low == [], low
        assert errors == []
    finally:
        context.close()
