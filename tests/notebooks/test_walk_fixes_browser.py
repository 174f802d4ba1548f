"""Fixes from a new user's walk through the website (issue 20, item 8), in real Chromium
under the real CSP: Back after a search shows the whole page, reloading the Connections
page after creating a key creates no second key, and `j` goes on past the first page."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests import factories
from tests.browser import sign_in, watch_console
from tests.notebooks.test_agents_browser import _owner

pytestmark = pytest.mark.slow


def test_back_after_a_search_shows_the_whole_page(browser_site: str, page: Page):
    """Search as you type pushes its URL, answered with a fragment; going Back to it
    from a note must show the page, not a cached fragment without styles."""
    owner = _owner("walker")
    for n in range(3):
        factories.note(owner, f"Compost turning, week {n}.")
    errors = watch_console(page)
    sign_in(page, browser_site, "walker")
    page.locator("#q").fill("compost")
    expect(page).to_have_url(re.compile(r"q=compost"))
    expect(page.locator("#count")).to_contain_text("matching")
    page.locator("ol.notes a.title").first.click()
    expect(page).to_have_url(re.compile(r"/notes/"))
    page.go_back()
    expect(page).to_have_url(re.compile(r"q=compost"))
    expect(page.locator(".sidebar")).to_be_visible()
    expect(page.locator("ol.notes li.note")).to_have_count(3)
    assert page.locator("link[rel=stylesheet]").count() >= 1
    assert page.evaluate("getComputedStyle(document.body).margin") != "8px"  # styled
    assert errors == []


def test_reloading_after_creating_a_key_creates_no_second_key(browser_site: str,
                                                              page: Page):
    from grove.identity import selectors

    owner = _owner("reloader")
    sign_in(page, browser_site, "reloader")
    page.goto(browser_site + "/connections/")
    page.get_by_label("Name").fill("laptop")
    page.get_by_label("Every notebook, current and future").check()
    page.get_by_role("button", name="Create key").click()
    expect(page.get_by_label("New API key")).to_have_value(re.compile(r"^grv_"))
    page.reload()  # the browser posts the form again
    expect(page.locator("main")).to_contain_text("created already")
    names = [c.name for c in selectors.connection_overview(actor=owner).connections]
    assert names.count("laptop") == 1


def test_j_goes_on_past_the_first_page(browser_site: str, page: Page):
    owner = _owner("scroller")
    for n in range(30):
        factories.note(owner, f"Note number {n}.")
    errors = watch_console(page)
    sign_in(page, browser_site, "scroller")
    for _ in range(27):
        page.keyboard.press("j")
    rows = page.locator("ol[data-keynav] > li.note")
    expect(rows).to_have_count(30)  # the second page came
    expect(rows.nth(26)).to_have_class(re.compile(r"\bselected\b"))
    expect(page.locator("li.note.selected")).to_have_count(1)
    expect(rows.nth(26).locator("a.title")).to_be_focused()
    assert errors == []


# WCAG contrast of every visible button and button-styled link, measured in the page:
# the text colour against the first opaque background behind it.
CONTRASTS = """() => {
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const behind = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] === 1)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  return Array.from(document.querySelectorAll("button, a.button"))
    .filter((el) => el.offsetParent !== null)
    .map((el) => {
      const [a, b] = [lum(rgb(getComputedStyle(el).color).slice(0, 3)), lum(behind(el))];
      return [el.textContent.trim(), (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)];
    });
}"""


@pytest.mark.parametrize("scheme", ["dark", "light"])
def test_buttons_are_readable_in_both_schemes(browser_site: str, browser, scheme: str):
    owner = _owner(f"contrast-{scheme}")
    garden = factories.notebook(owner, "Garden")
    note = factories.note(owner, "Tomatoes need sun.", notebook_id=garden.id)
    factories.connection(owner, all_notebooks=True)
    context = browser.new_context(color_scheme=scheme)
    page = context.new_page()
    try:
        sign_in(page, browser_site, f"contrast-{scheme}")
        measured = []
        for path in ("/", f"/notes/{note.id}/", f"/notebooks/{garden.id}/", "/connections/"):
            page.goto(browser_site + path)
            measured += [(path, text, ratio) for text, ratio in page.evaluate(CONTRASTS)]
        assert any(text.startswith("Delete") for _, text, _ in measured)  # danger ones
        assert any(text == "Revoke" for _, text, _ in measured)
        low = [m for m in measured if m[2] < 4.5]
        assert low == [], low
    finally:
        context.close()


def test_a_long_unbroken_word_never_scrolls_the_phone_sideways(browser_site: str,
                                                               browser):
    owner = _owner("narrow")
    word = "Supercalifragilistic" * 15
    note = factories.note(owner, f"{word}\n\n{word} {word}")
    context = browser.new_context(viewport={"width": 375, "height": 740})
    page = context.new_page()
    try:
        sign_in(page, browser_site, "narrow")
        for path in ("/", f"/notes/{note.id}/"):
            page.goto(browser_site + path)
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 375, (path, width)
    finally:
        context.close()


def test_question_mark_lists_the_shortcuts_and_enter_sends_in_ask(browser_site: str,
                                                                  page: Page):
    """Issue 20, item 9: `?` opens the shortcut sheet; in Ask, Enter sends the question
    and Shift+Enter starts a new line."""
    _owner("keys")
    errors = watch_console(page)
    sign_in(page, browser_site, "keys")
    page.keyboard.press("?")
    sheet = page.locator("dialog#shortcuts")
    expect(sheet).to_be_visible()
    expect(sheet).to_contain_text("Next and previous note")
    page.keyboard.press("Escape")
    expect(sheet).to_be_hidden()

    page.goto(browser_site + "/ask/")
    question = page.get_by_label("Question")
    question.fill("What grows in shade")
    question.press("Shift+Enter")
    question.press_sequentially("and in full sun?")
    expect(question).to_have_value("What grows in shade\nand in full sun?")
    expect(page).to_have_url(re.compile(r"/ask/$"))  # nothing sent yet
    question.press("Enter")
    expect(page.locator("li.turn").first).to_contain_text("and in full sun?")
    assert errors == []


def test_changing_the_password_signs_other_browsers_out(browser_site: str, browser,
                                                        page: Page):
    from tests.browser import PASSWORD

    _owner("changer")
    other = browser.new_context()
    elsewhere = other.new_page()
    try:
        sign_in(elsewhere, browser_site, "changer")
        sign_in(page, browser_site, "changer")
        page.goto(browser_site + "/settings/")
        page.get_by_role("link", name="Change your password").click()
        page.locator("#id_current").fill("not it at all")
        page.locator("#id_new").fill("a fresh long passphrase")
        page.locator("#id_new_again").fill("a fresh long passphrase")
        page.get_by_role("button", name="Change password").click()
        expect(page.locator(".errorlist")).to_contain_text("not your current password")
        page.locator("#id_current").fill(PASSWORD)
        page.locator("#id_new").fill("a fresh long passphrase")
        page.locator("#id_new_again").fill("a fresh long passphrase")
        page.get_by_role("button", name="Change password").click()
        expect(page.locator(".flash")).to_contain_text("Password changed")
        page.goto(browser_site + "/")  # this browser stays signed in
        expect(page.get_by_role("heading", name="All notes")).to_be_visible()
        elsewhere.goto(browser_site + "/")  # the other one is signed out
        expect(elsewhere).to_have_url(re.compile(r"/login/"))
        elsewhere.get_by_label("Username").fill("changer")
        elsewhere.get_by_label("Password").fill("a fresh long passphrase")
        elsewhere.get_by_role("button", name="Sign in").click()
        expect(elsewhere.get_by_role("heading", name="All notes")).to_be_visible()
    finally:
        other.close()


def test_a_phone_keeps_the_first_screen_for_notes(browser_site: str, browser):
    """375 px: the header is two rows (sections and account, then search) and the
    notebooks one row of chips that scrolls sideways — not three rows and 40 % of the
    screen; nothing scrolls the page sideways."""
    owner = _owner("phone")
    for name in ("Garden", "Kitchen", "Taxes", "Travel", "Reading list", "Work projects"):
        factories.notebook(owner, name)
    factories.note(owner, "A note to see.")
    context = browser.new_context(viewport={"width": 375, "height": 740})
    page = context.new_page()
    try:
        sign_in(page, browser_site, "phone")
        header = page.locator("header.top").bounding_box()
        chips = page.locator("nav.sidebar").bounding_box()
        assert header is not None and chips is not None
        assert header["height"] <= 100, header
        assert chips["height"] <= 0.1 * 740, chips
        assert page.evaluate("document.documentElement.scrollWidth") <= 375
        expect(page.locator("nav.sidebar").get_by_role("link", name="Work projects")) \
            .to_have_count(1)  # there, a sideways scroll away
        expect(page.locator("nav.menu").get_by_role("link", name="Connections")) \
            .to_have_count(1)
    finally:
        context.close()
