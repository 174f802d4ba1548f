"""`grove connect <client>` (issue 39 item 1): the exact configuration for each client,
printed, and with `--write` merged into the client's own file — what was there kept,
a backup first, Grove's entry and hooks replaced rather than repeated on a second run.
The real `grove` command, in a throwaway home folder."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import tomllib
from pathlib import Path

import pytest

from tests.grove.runtime.processes import GROVE

URL = "https://notes.example.org"
KEY = "grv_" + "k" * 75


def connect(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GROVE_", "XDG_"))}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    return subprocess.run([*GROVE, "connect", *args], env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


def _backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.grove-backup-*"))


def test_claude_code_is_merged_with_its_hooks_and_what_was_there_stays(tmp_path):
    claude = tmp_path / ".claude.json"
    claude.write_text(json.dumps({"numStartups": 7, "mcpServers": {
        "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"}}}))
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    theirs = {"type": "command", "command": "npx prettier --check .", "timeout": 30}
    settings.write_text(json.dumps({"model": "opus", "hooks": {
        "SessionStart": [{"matcher": "startup", "hooks": [theirs]}]}}))
    done = connect(tmp_path, "claude-code", "--url", URL, "--key", KEY, "--write")
    assert done.returncode == 0, done.stderr
    merged = _json(claude)
    assert merged["numStartups"] == 7 and "github" in merged["mcpServers"]
    assert merged["mcpServers"]["grove"] == {"type": "http", "url": f"{URL}/mcp"}
    hooks = _json(settings)
    assert hooks["model"] == "opus"
    starts = hooks["hooks"]["SessionStart"]
    assert starts[0]["hooks"] == [theirs]  # theirs first, kept as it was
    assert starts[1]["hooks"][0]["command"].endswith("hook session-start --client claude-code")
    assert set(hooks["hooks"]) == {"SessionStart", "UserPromptSubmit", "PreCompact",
                                   "SessionEnd"}
    assert hooks["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"] <= 3
    assert len(_backups(claude)) == 1 and _json(_backups(claude)[0])["numStartups"] == 7
    client = tmp_path / ".config" / "grove" / "client.json"
    assert _json(client) == {"url": URL, "key": KEY}
    assert stat.S_IMODE(client.stat().st_mode) == 0o600
    again = connect(tmp_path, "claude-code", "--url", URL, "--key", KEY, "--write")
    assert again.returncode == 0, again.stderr
    assert _json(settings)["hooks"] == hooks["hooks"]  # replaced, not repeated
    assert _json(claude) == merged


def test_what_a_person_added_to_grove_s_own_entries_stays(tmp_path):
    """A second run replaces Grove's hooks, not a group a person put one of theirs in,
    and keeps what they added to the server entry (a header); a new file is theirs
    alone."""
    claude = tmp_path / ".claude.json"
    claude.write_text(json.dumps({"mcpServers": {"grove": {
        "type": "http", "url": "http://old/mcp", "headers": {"X-Grove-Project": "garden"}}}}))
    assert connect(tmp_path, "claude-code", "--url", URL, "--write").returncode == 0
    settings = tmp_path / ".claude" / "settings.json"
    hooks = _json(settings)
    mine = {"type": "command", "command": "notify-send prompt", "timeout": 5}
    hooks["hooks"]["UserPromptSubmit"][0]["hooks"].append(mine)  # beside Grove's
    settings.write_text(json.dumps(hooks))
    assert connect(tmp_path, "claude-code", "--url", URL, "--write").returncode == 0
    groups = _json(settings)["hooks"]["UserPromptSubmit"]
    assert groups[0]["hooks"] == [mine] and len(groups) == 2
    assert groups[1]["hooks"][0]["command"].endswith("hook prompt --client claude-code")
    assert _json(claude)["mcpServers"]["grove"] == {
        "type": "http", "url": f"{URL}/mcp", "headers": {"X-Grove-Project": "garden"}}
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600


def test_codex_toml_keeps_its_comments_and_gets_hooks(tmp_path):
    config = tmp_path / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('# my settings\nmodel = "gpt-5-codex"\n\n[mcp_servers.docs]\n'
                      'command = "docs-mcp"  # the docs server\n')
    done = connect(tmp_path, "codex", "--url", URL, "--key", KEY, "--write")
    assert done.returncode == 0, done.stderr
    text = config.read_text()
    assert text.startswith("# my settings\n") and "# the docs server" in text
    parsed = tomllib.loads(text)
    assert parsed["model"] == "gpt-5-codex" and parsed["mcp_servers"]["docs"]["command"]
    assert parsed["mcp_servers"]["grove"] == {"url": f"{URL}/mcp"}
    hooks = _json(tmp_path / ".codex" / "hooks.json")["hooks"]
    assert hooks["UserPromptSubmit"][0]["hooks"][0]["command"].endswith(
        "hook prompt --client codex")
    assert "/hooks" in done.stdout  # Codex runs new hooks once trusted


@pytest.mark.parametrize(("client", "path", "entry"), [
    ("cursor", ".cursor/mcp.json", ("mcpServers", {"url": f"{URL}/mcp"})),
    ("vscode", ".config/Code/User/mcp.json",
     ("servers", {"type": "http", "url": f"{URL}/mcp"})),
])
def test_oauth_clients_get_the_url_alone(tmp_path, client, path, entry):
    done = connect(tmp_path, client, "--url", URL, "--write")
    assert done.returncode == 0, done.stderr
    root, server = entry
    assert _json(tmp_path / path) == {root: {"grove": server}}
    assert "new file" in done.stdout
    assert not (tmp_path / ".config" / "grove" / "client.json").exists()  # no key needed


def test_claude_desktop_gets_the_stdio_bridge_with_a_key(tmp_path):
    printed = connect(tmp_path, "claude-desktop", "--url", URL)
    assert printed.returncode == 0 and "needs an API key" in printed.stdout
    done = connect(tmp_path, "claude-desktop", "--url", URL, "--key", KEY, "--write")
    assert done.returncode == 0, done.stderr
    server = _json(tmp_path / ".config/Claude/claude_desktop_config.json")["mcpServers"][
        "grove"]
    assert server["args"] == ["mcp-stdio", "--url", URL]
    assert server["env"] == {"GROVE_API_KEY": KEY}
    assert Path(server["command"]).is_absolute()


def test_printing_writes_nothing_and_a_broken_file_is_left_alone(tmp_path):
    printed = connect(tmp_path, "cursor", "--url", URL)
    assert printed.returncode == 0
    assert json.loads(printed.stdout[printed.stdout.index("{"):]) == {
        "mcpServers": {"grove": {"url": f"{URL}/mcp"}}}
    assert list(tmp_path.iterdir()) == []
    broken = tmp_path / ".cursor" / "mcp.json"
    broken.parent.mkdir()
    broken.write_text("{not json")
    done = connect(tmp_path, "cursor", "--url", URL, "--write")
    assert done.returncode == 1 and "is not valid JSON" in done.stderr
    assert broken.read_text() == "{not json" and _backups(broken) == []
    bad = connect(tmp_path, "cursor", "--url", "ftp://x")
    assert bad.returncode == 2 and "not an http(s) URL" in bad.stderr
