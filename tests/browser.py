"""What the Chromium tests share: the test owner's password, signing in as a person
does, and the console errors that include every Content-Security-Policy violation."""

from playwright.sync_api import Page, expect

PASSWORD = "a long enough passphrase 42"


def watch_console(page: Page) -> list[str]:
    """Console errors, which include every Content-Security-Policy violation."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return errors


def sign_in(page: Page, site: str, username: str) -> None:
    page.goto(site + "/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="All notes")).to_be_visible()
