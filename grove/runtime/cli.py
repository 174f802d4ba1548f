"""The `grove` command: `manage.py` with Grove's settings, plus `grove serve`.

Configuration problems are reported as one line naming the setting, with a non-zero
exit status and no traceback (SPEC §2).
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

# Commands that never touch the database: no embedded server is started for them.
OFFLINE_COMMANDS = {
    "help", "--help", "-h", "version", "--version", "collectstatic",
    "diffsettings", "startapp", "startproject", "compilemessages", "makemessages",
    "squashmigrations", "optimizemigration",
}


def fail(message: str, code: int = 2) -> None:
    print(f"grove: error: {message}", file=sys.stderr)
    raise SystemExit(code)


_start = {"starting": True, "stop": 0}


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    """Turn SIGTERM into a normal exit so cleanup (stopping an owned server) runs. While
    the command is still starting — importing Django and its libraries — an exception
    raised in the middle of an import would leave half-made modules behind, and the
    cleanup, which imports some of them, would fail: the request is noted then, and
    carried out once start-up is done."""
    if _start["starting"]:
        _start["stop"] = 128 + signum
        return
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv if argv is None else argv)
    argv[0] = "grove"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "grove.settings")
    command = argv[1] if len(argv) > 1 else "help"
    if command == "mcp-stdio":  # a pure HTTP client: no configuration, no database
        from grove.runtime.bridge import main as bridge

        raise SystemExit(bridge(argv[2:]))
    if command in ("connect", "hook"):  # client side: no configuration, no database
        if command == "connect":
            from grove.runtime.connect import main as connect

            raise SystemExit(connect(argv[2:]))
        from grove.runtime.hooks import main as hook

        raise SystemExit(hook(argv[2:]))
    if command == "restore":  # before load(), which would create the folder it needs empty
        from grove.runtime.restore import main as restore

        raise SystemExit(restore(argv[2:]))

    from grove.runtime.config import ConfigError, load

    try:
        config = load()
    except ConfigError as exc:
        fail(str(exc))

    if command == "worker":
        from grove.runtime.serve import die_with_parent

        die_with_parent()  # when started by `grove serve`
    if command == "serve":
        from grove.runtime.serve import serve

        raise SystemExit(serve(config, argv[2:]))

    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    server = None
    try:
        if config.embedded and command not in OFFLINE_COMMANDS:
            from grove.runtime.embedded import EmbeddedPostgres

            server = EmbeddedPostgres(config.home)
            try:
                server.ensure_running()
            except ConfigError as exc:
                fail(str(exc))
        if command not in OFFLINE_COMMANDS:
            import django

            django.setup()
            from grove.runtime import dbroles

            try:
                dbroles.check_reachable("default")
                dbroles.check_pgvector("default")
                if command == "migrate":
                    dbroles.check_migration_roles()
                    dbroles.check_reachable("owner")
                else:
                    dbroles.check_runtime_role("default")
                if command in ("worker", "beat"):
                    from grove.embeddings.profile import check_embedding_profile

                    check_embedding_profile()
            except ConfigError as exc:
                fail(str(exc))

        from django.core.management import execute_from_command_line

        _start["starting"] = False
        if _start["stop"]:
            raise SystemExit(_start["stop"])
        execute_from_command_line(argv)
    finally:
        if server is not None:
            # The way out is under way: a second SIGTERM must not cut the release short.
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            from django.db import connections

            connections.close_all()  # ours must not count as "someone still connected"
            if command == "worker":
                from grove.runtime.serve import outlive_parent

                outlive_parent()
            server.release()
