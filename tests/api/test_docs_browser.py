"""`/v1/docs` (Swagger UI) in real Chromium under Grove's own Content-Security-Policy:
its assets come from Grove, nothing is blocked, and the operations list renders."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.slow


def test_the_api_docs_load_under_the_csp(browser_site: str, page: Page):
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    answer = page.goto(browser_site + "/v1/docs")
    assert answer is not None and answer.status == 200
    policy = answer.all_headers()["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    expect(page.locator(".opblock").first).to_be_visible()
    expect(page.locator(".opblock-summary-path", has_text="/v1/recall")).to_be_visible()
    assert page.locator(".opblock").count() >= 20
    page.locator(".opblock-summary-path", has_text="/v1/recall").first.click()
    expect(page.locator(".opblock-body").first).to_be_visible()
    assert errors == []
    assert requested and all(url.startswith(browser_site + "/") for url in requested), \
        [url for url in requested if not url.startswith(browser_site + "/")]
