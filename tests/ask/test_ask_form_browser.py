"""The Ask form in real Chromium under the real CSP: its "Search in" select looks like
every other select (it once lost its padding to a rule meant for the key form's radio
list, which shares the id `id_scope`), in light and dark mode."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

from tests import factories
from tests.browser import sign_in, watch_console
from tests.notebooks.test_agents_browser import _owner

pytestmark = pytest.mark.slow

LOOKS = """(selector) => {
  const s = getComputedStyle(document.querySelector(selector));
  return {padding: s.padding, border: s.border, radius: s.borderRadius, height: s.height,
          background: s.backgroundColor, color: s.color, font: s.fontSize};
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_search_in_looks_like_the_other_selects(browser_site: str, page: Page, scheme: str):
    owner = _owner(f"asker-{scheme}")
    factories.notebook(owner, "Garden")
    errors = watch_console(page)
    page.emulate_media(color_scheme=scheme)
    sign_in(page, browser_site, f"asker-{scheme}")
    page.goto(browser_site + "/ask/")
    scope = page.evaluate(LOOKS, "select[name=scope]")
    answer_as = page.evaluate(LOOKS, "select[name=format]")
    assert scope == answer_as
    assert scope["padding"] != "0px"
    page.goto(browser_site + "/settings/")  # the page's own background, for the scheme
    page_bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert scope["background"] == page_bg  # the selects' --bg, in this scheme
    # The key form's grant radios keep their unpadded list.
    page.goto(browser_site + "/connections/")
    assert page.evaluate("getComputedStyle(document.getElementById('id_scope')).padding") \
        == "0px"
    assert errors == []
