"""Take the README's screenshots of the real UI: `python scripts/screenshots.py`.

Starts `grove serve` on a throwaway data folder, walks through owner setup and the
library in headless Chromium (Playwright), and writes PNGs to docs/screenshots/.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from playwright.sync_api import sync_playwright

OUT = Path(__file__).resolve().parent.parent / "docs" / "screenshots"
PASSWORD = "a long enough passphrase 42"  # noqa: S105 - throwaway demo account
NOTES = [
    ("Grove", "decision", "Grove keeps one service layer; REST, MCP and the website call it."),
    ("Grove", "handoff", "Next: wire the REST envelope to the service errors."),
    ("Recipes", "solution", "Sourdough: 12-hour cold rise, then 45 minutes at 240 °C."),
    ("", "preference", "Answer in British English, with metric units."),
    ("Grove", "decision",
     "## Release checklist\n\n| step | owner | done |\n|---|---|---|\n"
     "| tag the release | CI | ~~no~~ yes |\n| publish the wheel | CI | no |\n\n"
     "- [x] changelog written\n- [ ] announcement"),
]


def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="grove-shots-", dir="/tmp"))
    home.chmod(0o711)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"} | {"GROVE_HOME": str(home)}
    server = subprocess.Popen([sys.executable, "-m", "grove", "serve", "--port", str(port)],
                              env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                httpx.get(base + "/login/", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        OUT.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=[
                "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run"])
            page = browser.new_page(viewport={"width": 1200, "height": 760})
            page.goto(base + "/")
            page.screenshot(path=OUT / "setup.png")
            page.get_by_label("Username").fill("owner")
            page.locator("#id_password").fill(PASSWORD)
            page.get_by_label("Password again").fill(PASSWORD)
            page.get_by_role("button", name="Create owner account").click()
            for name in ("Grove", "Recipes"):
                page.get_by_label("Name").fill(name)
                page.get_by_role("button", name="Create notebook").click()
            for notebook, kind, content in NOTES:
                page.get_by_label("Content").fill(content)
                page.get_by_label("Kind").select_option(kind)
                page.get_by_label("Notebook").select_option(label=notebook or "Personal")
                if kind == "handoff":
                    page.get_by_label("Task id").fill("rest-api")
                page.get_by_role("button", name="Save note").click()
            page.screenshot(path=OUT / "library.png", full_page=True)
            page.locator("li.note").first.get_by_role("link", name="open").click()
            page.screenshot(path=OUT / "note.png", full_page=True)
            page.get_by_role("link", name="Connections").click()
            page.get_by_label("Name").fill("Claude on the laptop")
            page.get_by_label("Every notebook, current and future").check()
            page.get_by_role("button", name="Create key").click()
            page.screenshot(path=OUT / "connections.png", full_page=True)
            state = page.context.storage_state()
            phone = browser.new_context(viewport={"width": 375, "height": 740},
                                        storage_state=state, color_scheme="dark")
            phone_page = phone.new_page()
            phone_page.goto(base + "/")
            phone_page.screenshot(path=OUT / "library-phone-dark.png", full_page=True)
            browser.close()
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        shutil.rmtree(home, ignore_errors=True)
    print(f"wrote {', '.join(p.name for p in sorted(OUT.glob('*.png')))}")


if __name__ == "__main__":
    main()
