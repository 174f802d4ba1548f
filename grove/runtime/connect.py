"""`grove connect <client>`: the exact configuration that connects an MCP client to this
Grove — and, for clients with hooks, the hooks that give it memory without being asked
(`grove hook`, grove/runtime/hooks.py). Printed by default; `--write` merges it into the
client's own file, keeping everything else there, after a backup.

* claude-code: HTTP with OAuth (`/mcp` in Claude Code signs in), and hooks —
  `~/.claude.json`, `~/.claude/settings.json`;
* claude-desktop: the stdio bridge (`grove mcp-stdio`) with an API key (its config file
  only launches commands) — `claude_desktop_config.json`;
* codex: HTTP with OAuth (`codex mcp login grove`), and hooks — `~/.codex/config.toml`,
  `~/.codex/hooks.json`;
* cursor: HTTP with OAuth — `~/.cursor/mcp.json`;
* vscode: HTTP with OAuth — the user profile's `mcp.json`.

Hooks call Grove's REST API with an API key kept in Grove's client file
(`~/.config/grove/client.json`, readable by the user alone), never in the client's
settings. `--create-key --user NAME` makes that key (or the bridge's) on this machine
with `grove key create`; `--key` takes one made on the Connections page.

Pure client code: no Django and no database (a key is made by another `grove` process).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CLIENTS = ("claude-code", "claude-desktop", "codex", "cursor", "vscode")
HOOKED = ("claude-code", "codex")
SERVER_NAME = "grove"
KEY_PLACEHOLDER = "<an API key: Connections page, or --create-key>"
# What the hooks run, by the client's event: the command's last word is `grove hook`'s.
HOOK_EVENTS = {"SessionStart": "session-start", "UserPromptSubmit": "prompt",
               "PreCompact": "pre-compact", "SessionEnd": "session-end"}
# Seconds the client waits for each (it drops a late one: memory is then not injected,
# the prompt goes on). A session's end only hands the work to a background process.
HOOK_TIMEOUTS = {"SessionStart": 15, "UserPromptSubmit": 8, "PreCompact": 10,
                 "SessionEnd": 3}


class ConnectError(Exception):
    """Something `grove connect` cannot do, said in one line."""


def client_file() -> Path:
    """Grove's client file: the server and API key the hooks use."""
    override = os.environ.get("GROVE_CLIENT_CONFIG")
    if override:
        return Path(override)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "grove" / "client.json"


def _app_data(*parts: str) -> Path:
    """A per-user application folder, as the client's own OS puts it."""
    if sys.platform == "darwin":
        return Path.home().joinpath("Library", "Application Support", *parts)
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA", str(Path.home()))).joinpath(*parts)
    return Path(os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")).joinpath(
        *parts)


@dataclass
class Change:
    """One file of a client's configuration: what to merge into it, and how."""

    path: Path
    merge: Callable[[Any], Any]  # the file's current content → the content to write
    fmt: str = "json"  # json | toml
    what: str = ""  # said before the printed snippet
    snippet: Any = None  # what is merged, as printed


@dataclass
class Plan:
    client: str
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _grove_command() -> str:
    """How a client launches this Grove: the `grove` beside this interpreter, by its
    absolute path (apps do not see the shell's PATH)."""
    here = Path(sys.executable).with_name("grove")
    found = shutil.which("grove")
    return str(here if here.exists() else Path(found) if found else "grove")


def _hooks(command: str) -> dict[str, Any]:
    return {event: [{"hooks": [{"type": "command",
                                "command": f"{shlex.quote(command)} hook {name} "
                                           "--client {client}",
                                "timeout": HOOK_TIMEOUTS[event]}]}]
            for event, name in HOOK_EVENTS.items()}


def _is_ours(handler: Any) -> bool:
    """A hook `grove connect` wrote: `<grove> hook <event> --client <client>`."""
    try:
        words = shlex.split(str(handler.get("command", ""))) if isinstance(
            handler, dict) else []
    except ValueError:
        return False
    return (len(words) == 5 and words[1] == "hook" and words[2] in HOOK_EVENTS.values()
            and words[3] == "--client" and words[4] in HOOKED)


def _merge_hooks(current: Any, ours: dict[str, Any]) -> dict[str, Any]:
    """`ours` into a settings object's `hooks`: Grove's own hooks taken out of every
    group (a group left empty by that goes too), everyone else's kept as they are, then
    ours added."""
    merged = dict(current or {})
    hooks = dict(merged.get("hooks") or {})
    for event, groups in ours.items():
        kept = []
        for group in hooks.get(event) or []:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list):
                kept.append(group)
                continue
            theirs = [handler for handler in handlers if not _is_ours(handler)]
            if theirs:
                kept.append({**group, "hooks": theirs})
        hooks[event] = kept + groups
    merged["hooks"] = hooks
    return merged


def _set_in(current: Any, keys: tuple[str, ...], value: Any) -> dict[str, Any]:
    """`current` (a JSON object, or nothing yet) with `value` at `keys`, the rest kept."""
    merged = dict(current or {})
    node = merged
    for key in keys[:-1]:
        child = node.get(key)
        node[key] = dict(child) if isinstance(child, dict) else {}
        node = node[key]
    before = node.get(keys[-1])
    # Grove's entry written anew, what a person added to it (headers, env …) kept.
    node[keys[-1]] = {**before, **value} if isinstance(before, dict) and isinstance(
        value, dict) else value
    return merged


def plan(client: str, url: str, *, key: str | None, hooks: bool = True) -> Plan:
    """What connects `client` to the Grove at `url` (its base URL)."""
    mcp_url = url.rstrip("/") + "/mcp"
    home = Path.home()
    command = _grove_command()
    out = Plan(client)
    server: dict[str, Any]
    if client == "claude-code":
        server = {"type": "http", "url": mcp_url}
        out.changes.append(Change(
            home / ".claude.json", lambda c: _set_in(c, ("mcpServers", SERVER_NAME), server),
            what="MCP server (user scope; OAuth: run /mcp in Claude Code and sign in)",
            snippet={"mcpServers": {SERVER_NAME: server}}))
    elif client == "claude-desktop":
        server = {"command": command,
                                  "args": ["mcp-stdio", "--url", url.rstrip("/")],
                  "env": {"GROVE_API_KEY": key or KEY_PLACEHOLDER}}
        out.changes.append(Change(
            _app_data("Claude", "claude_desktop_config.json"),
            lambda c: _set_in(c, ("mcpServers", SERVER_NAME), server),
            what="MCP server (the stdio bridge: Claude Desktop's file launches commands "
                 "only; restart Claude Desktop after)",
            snippet={"mcpServers": {SERVER_NAME: server}}))
        if key is None:
            out.notes.append("The bridge needs an API key: add --key KEY, or --create-key "
                             "--user NAME on the Grove server's machine.")
    elif client == "codex":
        server = {"url": mcp_url}
        out.changes.append(Change(
            home / ".codex" / "config.toml",
            lambda c: _set_toml(c, server), fmt="toml",
            what="MCP server (OAuth: run `codex mcp login grove`)",
            snippet=f"[mcp_servers.{SERVER_NAME}]\nurl = \"{mcp_url}\""))
    elif client == "cursor":
        server = {"url": mcp_url}
        out.changes.append(Change(
            home / ".cursor" / "mcp.json",
            lambda c: _set_in(c, ("mcpServers", SERVER_NAME), server),
            what="MCP server (OAuth: Cursor asks you to sign in)",
            snippet={"mcpServers": {SERVER_NAME: server}}))
    elif client == "vscode":
        server = {"type": "http", "url": mcp_url}
        out.changes.append(Change(
            _app_data("Code", "User", "mcp.json"),
            lambda c: _set_in(c, ("servers", SERVER_NAME), server),
            what="MCP server (user profile; OAuth: VS Code asks you to sign in)",
            snippet={"servers": {SERVER_NAME: server}}))
    else:
        raise ConnectError(f"unknown client {client!r}: one of {', '.join(CLIENTS)}")
    if hooks and client in HOOKED:
        ours = json.loads(json.dumps(_hooks(command)).replace("{client}", client))
        target = (home / ".claude" / "settings.json" if client == "claude-code"
                  else home / ".codex" / "hooks.json")
        out.changes.append(Change(target, lambda c: _merge_hooks(c, ours),
                                  what="hooks (memory without being asked)",
                                  snippet={"hooks": ours}))
        if client == "codex":
            out.notes.append("Codex runs new hooks once you trust them: open /hooks in Codex.")
        if key is None:
            out.notes.append(f"The hooks need an API key in {client_file()}: add --key KEY, "
                             "or --create-key --user NAME.")
    return out


def _set_toml(current: Any, server: dict[str, Any]) -> Any:
    import tomlkit

    document = current if current is not None else tomlkit.document()
    servers = document.get("mcp_servers")
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        document["mcp_servers"] = servers
    table = servers.get(SERVER_NAME)
    if table is None:
        table = tomlkit.table()
        servers[SERVER_NAME] = table
    for name, value in server.items():  # what a person added to it stays
        table[name] = value
    return document


def _read(change: Change) -> Any:
    if not change.path.exists():
        return None
    text = change.path.read_text(encoding="utf-8")
    try:
        if change.fmt == "toml":
            import tomlkit

            return tomlkit.parse(text)
        return json.loads(text) if text.strip() else None
    except ValueError as exc:
        raise ConnectError(f"{change.path} is not valid {change.fmt.upper()} ({exc}); "
                           "fix it first — nothing was written") from None


def _dump(change: Change, content: Any) -> str:
    if change.fmt == "toml":
        import tomlkit

        return tomlkit.dumps(content)
    return json.dumps(content, indent=2, ensure_ascii=False) + "\n"


def write(change: Change, *, now: float | None = None) -> Path | None:
    """Merge `change` into its file: a backup of the file first (returned; None for a
    new file), then the new content written whole and renamed into place."""
    current = _read(change)
    merged = change.merge(current)
    backup = None
    if change.path.exists():
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
        backup = change.path.with_name(f"{change.path.name}.grove-backup-{stamp}")
        shutil.copy2(change.path, backup)
    change.path.parent.mkdir(parents=True, exist_ok=True)
    temporary = change.path.with_name(f".{change.path.name}.grove-tmp")
    # A new file is the user's alone (it may hold a key); an old one keeps its mode.
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(_dump(change, merged))
    if change.path.exists():
        shutil.copymode(change.path, temporary)
    os.replace(temporary, change.path)
    return backup


def save_client_file(url: str, key: str) -> Path:
    """The server and key the hooks use, readable by this user alone."""
    path = client_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        json.dump({"url": url.rstrip("/"), "key": key}, out)
    os.chmod(path, 0o600)
    return path


def create_key(user: str, client: str) -> str:
    """An API key of `user`'s account with every notebook and Personal, made by `grove
    key create` on this machine (the server's configuration and database)."""
    made = subprocess.run(
        [sys.executable, "-m", "grove", "key", "create", "--user", user,
         "--name", f"{client} (grove connect)", "--all"],
        capture_output=True, text=True, timeout=300, check=False)
    key = made.stdout.strip().splitlines()[-1] if made.stdout.strip() else ""
    if made.returncode != 0 or not key.startswith("grv_"):
        problem = made.stderr.strip().splitlines()[-1] if made.stderr.strip() else "failed"
        raise ConnectError(f"could not create a key: {problem}")
    return key


def _shown(change: Change) -> str:
    if isinstance(change.snippet, str):
        return change.snippet
    return json.dumps(change.snippet, indent=2, ensure_ascii=False)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="grove connect",
        description="Print (or, with --write, merge in) the configuration that connects an "
                    "MCP client to Grove; for Claude Code and Codex, also the hooks that "
                    "give it memory without being asked.")
    parser.add_argument("client", choices=CLIENTS)
    parser.add_argument("--url", default=os.environ.get("GROVE_BASE_URL",
                                                        "http://127.0.0.1:8000"),
                        help="Grove's address (default: GROVE_BASE_URL, else "
                             "http://127.0.0.1:8000)")
    parser.add_argument("--key", help="an API key for the bridge and the hooks")
    parser.add_argument("--create-key", action="store_true",
                        help="create that key on this machine (needs --user)")
    parser.add_argument("--user", help="the account's user name, for --create-key")
    parser.add_argument("--no-hooks", action="store_true", help="leave the hooks out")
    parser.add_argument("--write", action="store_true",
                        help="merge it into the client's files (each backed up first)")
    args = parser.parse_args(argv)
    if not args.url.startswith(("http://", "https://")):
        print(f"grove connect: error: --url {args.url!r} is not an http(s) URL",
              file=sys.stderr)
        return 2
    try:
        key = args.key
        if args.create_key:
            if not args.user:
                raise ConnectError("--create-key needs --user (the account's user name)")
            key = create_key(args.user, args.client)
        made = plan(args.client, args.url, key=key, hooks=not args.no_hooks)
        hooks = not args.no_hooks and args.client in HOOKED
        for change in made.changes:
            if args.write:
                backup = write(change)
                print(f"{change.what}: merged into {change.path}"
                      + (f" (backup: {backup})" if backup else " (new file)"))
            else:
                print(f"# {change.what} — in {change.path}:\n{_shown(change)}\n")
        if key and hooks:
            if args.write:
                print(f"hooks' server and key: {save_client_file(args.url, key)}")
            else:
                print(f"# the hooks' server and key — in {client_file()} (mode 600):\n"
                      + json.dumps({"url": args.url.rstrip("/"), "key": key}) + "\n")
        elif args.create_key and not args.write:
            print(f"# the new key (shown once): {key}\n")
        for note in made.notes:
            if not (key and "API key" in note):
                print(note)
    except ConnectError as exc:
        print(f"grove connect: error: {exc}", file=sys.stderr)
        return 1
    return 0
