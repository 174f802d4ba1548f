"""Take the README's screenshots of the real UI: `python scripts/screenshots.py`.

Starts `grove serve` on a throwaway data folder, walks through owner setup, notebooks,
notes, search, a note's history, a share link, Ask, a notebook's vision, an app
connecting by OAuth (consent, approval), Connections, an agent writing with its key, a
notebook's ground truth with an agent's change held for review and a contradicting write
held by the check of agents' writes,
Settings (the account's vision), "What your agents read", Activity and the account
deletion page in headless Chromium
(Playwright), and writes desktop and phone-width PNGs to docs/screenshots/. Any console
error (a Content-Security-Policy violation included) fails the run.

Ask needs a model: the script serves a scripted stand-in over the OpenAI wire protocol
(the tests' fake server), which answers from the notes Grove sends it — the screenshots
show Grove's real pages, citation checking and chips.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from playwright.sync_api import Locator, Page, sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.fake_openai import FakeOpenAI  # noqa: E402 - the repository's own test server

OUT = Path(__file__).resolve().parent.parent / "docs" / "screenshots"
PASSWORD = "a long enough passphrase 42"  # noqa: S105 - throwaway demo account
NOTEBOOKS = [("Grove", ""), ("Releases", "Grove"), ("Recipes", "")]
NOTES = [
    ("Grove", "decision", "Grove keeps one service layer\n\nREST, MCP and the website all "
     "call the same services, so a rule is written once."),
    ("Grove", "handoff", "Next: wire the REST envelope to the service errors.\n\n"
     "Done so far: notes, search, recall."),
    ("Recipes", "solution", "Sourdough timing\n\n12-hour cold rise, then 45 minutes at 240 °C."),
    ("", "preference", "Answer in British English, with metric units."),
    ("Recipes", "fact", "Our oven runs 10 °C hot; set 230 °C for 240 °C."),
    ("Recipes", "fact", "Oven note: it runs hot, so bake a little cooler than recipes say."),
    ("Releases", "decision",
     "## Release checklist\n\n| step | owner | done |\n|:---|:---:|---:|\n"
     "| tag the release | CI | ~~no~~ yes |\n| publish the wheel | CI | no |\n\n"
     "- [x] changelog written\n- [ ] announcement"),
]
# Tags by a note's first line.
TAGS = {"Grove keeps one service layer": "architecture", "Sourdough timing": "bread, oven",
        "Our oven runs 10 °C hot; set 230 °C for 240 °C.": "oven",
        "Oven note: it runs hot, so bake a little cooler than recipes say.": "oven",
        "## Release checklist": "release"}
VISIONS = [
    "Grove is where a person and their agents keep what they know.",
    "## Grove is where a person and their agents keep what they know\n\n"
    "- **One service layer**: the website, REST and MCP never disagree.\n"
    "- Agents read the brief first, and write only where they are granted.\n"
    "- Nothing in a note makes a browser fetch anything.",
]
ACCOUNT_VISION = ("Keep notes short and true. Decisions name their reason; handoffs say "
                  "what is done and what is next.")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


def demo_answer(body: dict) -> str:
    """The stand-in model: answers the oven question from the notes it was sent."""
    import json
    import re

    schema = body["response_format"]["json_schema"]["name"]
    prompt = body["messages"][-1]["content"]
    if schema == "grove_standalone_question":
        return json.dumps({"question": prompt.rsplit("Latest question:", 1)[-1].strip()})
    notes = dict(re.findall(r'<note id="([^"]+)"[^>]*>\n(.*?)\n</note>', prompt, re.S))
    if schema == "grove_verification":  # a check against the declared notes
        proposed = prompt.rsplit("<revision>", 1)[-1].split("</revision>", 1)[0].strip()
        if "HTML" in proposed and notes:
            return json.dumps({"findings": [{
                "claim": proposed.splitlines()[0], "finding": "contradicts",
                "note_id": next(iter(notes)), "why": "The declared note says REST "
                                                     "errors come from the services."}]})
        return json.dumps({"findings": [{"claim": proposed.splitlines()[0],
                                         "finding": "unverifiable", "note_id": "",
                                         "why": "The declared notes do not say."}]})

    def cite(word: str) -> list[str]:
        return [i for i, text in notes.items() if word in text][:1]

    if "Question: merge" in prompt:  # a proposal: the two oven notes become one
        hot = [i for i, text in notes.items() if "runs" in text and "hot" in text][:2]
        merged = ("Our oven runs 5 °C hot: set 235 °C for 240 °C, and bake a little "
                  "cooler than recipes say.")
        return json.dumps({"status": "answered", "blocks": [
            {"text": "These two notes both say the oven runs hot; I propose one note.",
             "citations": hot}], "proposals": [
            {"kind": "merge", "action": None, "notes": hot, "content": merged,
             "summary": "Both notes say the oven runs hot; keep one with both details.",
             "note_kind": None, "notebook": None, "subject": None, "name": None}]})

    dial = "230 °C" if "230" in " ".join(notes.values()) else "235 °C"
    return json.dumps({"status": "answered", "blocks": [
        {"text": "Bake the sourdough at **240 °C** for 45 minutes, after a 12-hour cold "
                 "rise.", "citations": cite("Sourdough")},
        {"text": f"Your oven runs hot, so set the dial to **{dial}**.",
         "citations": cite("oven runs")}]})


def sidebar_notebook(page: Page, name: str) -> Locator:
    """A notebook's link in the sidebar (its name, then its note count)."""
    return page.locator(".sidebar a.notebook",
                        has=page.locator(".name", has_text=re.compile(f"^{re.escape(name)}$")))


def shoot(page: Page, name: str) -> None:
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=OUT / f"{name}.png", full_page=True)


def connect_an_app(page: Page, base: str) -> None:
    """An app signs in by OAuth (consent page), asks for access (connection_required)
    and the owner approves it read-only for one notebook (approve page)."""
    import base64
    import hashlib
    import json
    import secrets
    from urllib.parse import parse_qs, urlencode, urlsplit

    callback = "https://claude.ai/api/mcp/auth_callback"
    client_id = httpx.post(f"{base}/o/register/", json={
        "client_name": "Claude", "redirect_uris": [callback],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"]}).json()["client_id"]
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(
        hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    page.goto(f"{base}/o/authorize/?" + urlencode({
        "response_type": "code", "client_id": client_id, "redirect_uri": callback,
        "code_challenge": challenge, "code_challenge_method": "S256", "state": "demo",
        "scope": "mcp", "resource": f"{base}/mcp"}))
    shoot(page, "consent")
    arrived: list[str] = []

    def at_the_app(route) -> None:  # stands in for claude.ai
        arrived.append(route.request.url)
        route.fulfill(status=200, content_type="text/html", body="<p>Connected.</p>")

    page.route("https://claude.ai/**", at_the_app)
    page.get_by_role("button", name="Continue").click()
    page.wait_for_url(f"{callback}?**")
    code = parse_qs(urlsplit(arrived[0]).query)["code"][0]
    token = httpx.post(f"{base}/o/token/", data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": callback,
        "client_id": client_id, "code_verifier": verifier}).json()["access_token"]
    answer = httpx.post(f"{base}/mcp", headers={"Authorization": f"Bearer {token}"}, json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "recall", "arguments": {}}}).json()
    approval = json.loads(answer["result"]["content"][1]["text"])["approvalUrl"]
    page.goto(approval)
    page.get_by_label("Releases").check()
    shoot(page, "approve")
    page.get_by_role("button", name="Approve").click()


def an_agent_writes(base: str, key: str) -> None:
    """An agent with an API key saves a decision and moves the REST handoff on."""
    headers = {"Authorization": f"Bearer {key}"}
    notebooks = httpx.get(f"{base}/v1/notebooks", headers=headers).json()["data"]
    grove = next(nb["id"] for nb in notebooks if nb["name"] == "Grove")
    for body in (
        {"content": "Errors map once per interface\n\nREST, MCP and the website each "
                    "translate the same domain errors; no view invents its own shape.",
         "kind": "decision", "notebookId": grove},
        {"content": "Next: document the envelope's error codes.\n\nDone so far: notes, "
                    "search, recall, the REST envelope.", "kind": "handoff",
         "notebookId": grove, "taskId": "rest-api"},
    ):
        saved = httpx.post(f"{base}/v1/notes", headers=headers, json=body)
        saved.raise_for_status()


def declare_and_hold(page: Page, base: str, key: str) -> None:
    """The owner declares two of Grove's notes authoritative (restrict) and a claim known
    to be false; the agent's correction of a declared note is held for review."""
    page.goto(base + "/")
    sidebar_notebook(page, "Grove").click()
    page.get_by_role("link", name="Manage notebook").click()
    card = page.locator("#truth")
    lasting = card.locator("label.choice").filter(has_not_text="handoff")
    for n in (0, 1):
        lasting.nth(n).locator("input").check()
    card.get_by_label("Policy").select_option("restrict")
    card.get_by_role("button", name="Save declaration").click()
    page.wait_for_selector(".flash:has-text('Declared 2 notes')")
    card.get_by_label("A claim known to be false").fill("The REST API answers errors as HTML.")
    card.get_by_role("button", name="Add").click()
    page.wait_for_selector("ul.negatives li")
    declared = card.locator("ul.declared li").first.get_attribute("data-note")
    held = httpx.patch(f"{base}/v1/notes/{declared}",
                       headers={"Authorization": f"Bearer {key}"},
                       json={"content": "Errors map once per interface\n\nREST, MCP and the "
                                        "website translate the same domain errors; every "
                                        "code is listed in docs/api.md."})
    held.raise_for_status()
    page.reload()
    card.get_by_label("Check agents' facts, decisions and solutions").check()
    card.get_by_role("button", name="Save checking").click()
    page.wait_for_selector(".flash:has-text('are now checked')")
    grove = card.get_attribute("data-notebook")
    checked = httpx.post(f"{base}/v1/notes", headers={"Authorization": f"Bearer {key}"},
                         json={"content": "The REST API answers errors as HTML pages.",
                               "kind": "fact", "notebookId": grove})
    assert checked.status_code == 202, checked.text  # held: it contradicts the declaration
    page.reload()
    page.wait_for_selector("#truth li[data-pending][data-checked]")
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=OUT / "truth.png", full_page=True, clip=card.bounding_box())


def bring_a_vault_in(page: Page, base: str, home: Path) -> None:
    """Upload a small Obsidian-style vault as a zip and shoot its finished progress."""
    import zipfile

    bundle = home / "field-notes.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        archive.writestr(".obsidian/workspace.json", "{}")
        archive.writestr(".groundignore", "drafts/\n")
        archive.writestr("drafts/unfinished.md", "not yet")
        archive.writestr("Glaciers/moraines.md", "---\ntags: [field]\n---\n# Moraines\n\n"
                         "Lateral moraines mark the glacier's old edges.")
        archive.writestr("Glaciers/samples.md", "# Samples\n\nKeep the ice cores below "
                         "-20 °C.\n\n<private>Lab door code: 4471</private>")
        archive.writestr("Trips/2026-06.md", "# June trip\n\nThe melt started early.")
        archive.writestr("keys.md", "Upload key for the lab share: AKIA" + "Q7RT2XW9LM4KPZ3N")
    page.goto(base + "/ingest/")
    page.get_by_label("Into the notebook").fill("Field notes")
    page.get_by_label("A zip file").set_input_files(str(bundle))
    page.get_by_role("button", name="Upload and ingest").click()
    page.wait_for_selector('#progress[data-state="done"]', timeout=60_000)
    shoot(page, "ingest")


def save_vision(page: Page, text: str) -> None:
    card = page.locator("#vision")
    if card.locator("details.vision-edit[open]").count() == 0:
        card.locator("details.vision-edit summary").click()
    card.get_by_label("Vision (markdown)").fill(text)
    card.get_by_role("button", name="Save vision").click()
    page.wait_for_selector(".flash:has-text('Vision saved.')")


def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="grove-shots-", dir="/tmp"))
    home.chmod(0o711)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = FakeOpenAI().__enter__()
    model.chat_replies = [demo_answer] * 20
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"} | {
        "GROVE_HOME": str(home), "GROVE_LLM_BASE_URL": model.url,
        "GROVE_LLM_MODEL": "stand-in"}  # the base URL follows --port
    server = subprocess.Popen([sys.executable, "-m", "grove", "serve", "--port", str(port)],
                              env=env)
    base = f"http://127.0.0.1:{port}"
    errors: list[str] = []
    try:
        for _ in range(300):
            try:
                httpx.get(base + "/login/", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        OUT.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.on("console", lambda m: errors.append(f"{page.url}: {m.text}")
                    if m.type == "error" else None)
            page.goto(base + "/")
            shoot(page, "setup")
            page.get_by_label("Username").fill("owner")
            page.locator("#id_password").fill(PASSWORD)
            page.get_by_label("Password again").fill(PASSWORD)
            page.get_by_role("button", name="Create owner account").click()
            for name, parent in NOTEBOOKS:
                page.goto(base + "/notebooks/new")
                page.get_by_label("Name").fill(name)
                if parent:
                    page.get_by_label("Parent").select_option(label=parent)
                page.get_by_role("button", name="Create notebook").click()
            for notebook, kind, content in NOTES:
                page.goto(base + "/notes/new")
                page.get_by_label("Content").fill(content)
                page.get_by_label("Kind").select_option(kind)
                page.get_by_label("Tags").fill(TAGS.get(content.split("\n")[0], ""))
                path = {"Releases": "Grove / Releases"}.get(notebook, notebook or "Personal")
                page.locator("#id_notebook").select_option(label=path)
                if kind == "handoff":
                    page.get_by_label("Task id").fill("rest-api")
                page.get_by_role("button", name="Save note").click()
            page.goto(base + "/")
            page.get_by_role("link", name="Grove keeps one service layer").click()
            page.get_by_role("button", name="Pin", exact=True).click()
            page.goto(base + "/")
            shoot(page, "library")
            for title in ("Sourdough timing", "Our oven runs 10 °C hot; set 230 °C for 240 °C."):
                page.locator("ol.notes li.note", has=page.get_by_role(
                    "link", name=title, exact=True)).locator("input.pick").click()
            page.locator("#bulk").get_by_label("Move to").select_option(label="Recipes")
            shoot(page, "library-bulk")
            # A fresh page: a full-page screenshot leaves `style=""` on the focused
            # input, which htmx would carry into the next swap (a CSP report).
            page.goto(base + "/")
            page.locator("#q").fill("ove")  # a word still being typed: "oven"
            page.wait_for_selector("#count:has-text('matching')")
            shoot(page, "search")
            page.goto(base + "/")
            page.get_by_role("link", name="Release checklist").click()
            shoot(page, "note")
            page.get_by_role("link", name="Edit", exact=True).click()
            page.get_by_label("Content").fill(page.get_by_label("Content").input_value()
                                              .replace("| no |", "| yes |"))
            page.wait_for_selector("#preview td:has-text('yes')")
            shoot(page, "note-editor")
            page.get_by_role("button", name="Save changes").click()
            page.get_by_role("link", name="History", exact=True).click()
            page.get_by_role("button", name="Compare").click()
            page.wait_for_selector("pre.diff")
            shoot(page, "note-history")
            page.get_by_role("link", name="Share", exact=True).click()
            page.get_by_role("button", name="Create public link").click()
            link = page.get_by_label("Public link").input_value()
            visitor = browser.new_context(viewport={"width": 1280, "height": 800})
            public_page = visitor.new_page()
            public_page.on("console",
                           lambda m: errors.append(m.text) if m.type == "error" else None)
            public_page.goto(link)
            shoot(public_page, "share-public")
            visitor.close()
            page.goto(base + "/shares/")
            shoot(page, "shares")
            page.goto(base + "/ask/")
            page.get_by_label("Question").fill("How hot should the oven be for sourdough?")
            page.get_by_role("button", name="Ask", exact=True).click()
            page.wait_for_selector("li.turn[data-status=completed]", timeout=60_000)
            shoot(page, "ask")
            conversation = page.url
            page.locator("a.chip").last.click()
            page.get_by_role("link", name="Edit", exact=True).click()
            page.get_by_label("Title").fill("Our oven runs 5 °C hot; set 235 °C for 240 °C.")
            page.get_by_label("Content").fill("")
            page.get_by_role("button", name="Save changes").click()
            page.goto(conversation)
            page.wait_for_selector(".badge.changed")
            shoot(page, "ask-changed")
            page.goto(base + "/ask/")
            page.get_by_label("Question").fill("merge my two notes about the oven running hot")
            page.get_by_role("button", name="Ask", exact=True).click()
            page.wait_for_selector("article.proposal[data-state=proposed]", timeout=60_000)
            shoot(page, "ask-proposal")
            page.get_by_role("button", name="Apply").click()
            page.wait_for_selector("article.proposal[data-state=applied]")
            shoot(page, "ask-proposal-applied")
            page.goto(base + "/")
            sidebar_notebook(page, "Grove").click()
            page.get_by_role("link", name="Manage notebook").click()
            shoot(page, "notebook")
            for text in VISIONS:
                save_vision(page, text)
            shoot(page, "vision")
            connect_an_app(page, base)
            page.goto(base + "/connections/")
            page.get_by_label("Name").fill("Claude on the laptop")
            page.get_by_label("Every notebook, current and future").check()
            page.get_by_role("button", name="Create key").click()
            key = page.get_by_label("New API key").input_value()
            shoot(page, "connections")
            an_agent_writes(base, key)
            declare_and_hold(page, base, key)
            page.goto(base + "/settings/")
            save_vision(page, ACCOUNT_VISION)
            shoot(page, "settings")
            bring_a_vault_in(page, base, home)
            page.goto(base + "/agents/brief/")
            form = page.locator("#brief-form")
            form.get_by_label("Notebook").select_option(label="Grove")
            page.wait_for_selector("pre.brief-text:has-text('Vision — Grove')")
            form.get_by_label("Focus").fill("the REST envelope")
            form.get_by_label("Focus").press("Enter")
            page.wait_for_function("location.search.includes('focus=')")
            page.wait_for_load_state("networkidle")
            shoot(page, "brief")
            page.goto(base + "/activity/")
            shoot(page, "activity")
            state = page.context.storage_state()
            phone = browser.new_context(viewport={"width": 375, "height": 740},
                                        storage_state=state, color_scheme="dark")
            phone_page = phone.new_page()
            phone_page.on("console",
                          lambda m: errors.append(m.text) if m.type == "error" else None)
            phone_page.goto(base + "/")
            shoot(phone_page, "library-phone-dark")
            phone_page.get_by_role("link", name="Release checklist").click()
            shoot(phone_page, "note-phone-dark")
            page.goto(base + "/settings/delete-account/")  # last: it ends the account
            shoot(page, "delete-account")
            browser.close()
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        model.__exit__()
        shutil.rmtree(home, ignore_errors=True)
    if errors:
        raise SystemExit("console errors:\n" + "\n".join(errors))
    print(f"wrote {', '.join(p.name for p in sorted(OUT.glob('*.png')))}")


if __name__ == "__main__":
    main()
