"""`grove key create`: make an API key from the command line (prints it once).

    grove key create --user USERNAME --name NAME [--all | --notebook ID …]
                     [--personal] [--read-only]
    grove key list --user USERNAME
    grove key revoke --user USERNAME ID

Acts as the account owner (whoever can run this command on the server already holds
the database), through the same services as the Connections page.
"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "Create, list or revoke API keys."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a key and print it (shown once)")
        create.add_argument("--user", required=True, help="the account's user name")
        create.add_argument("--name", required=True, help="what the key is for, e.g. 'laptop'")
        scope = create.add_mutually_exclusive_group()
        scope.add_argument("--all", action="store_true",
                           help="every notebook, current and future (and Personal)")
        scope.add_argument("--notebook", action="append", default=[], metavar="ID",
                           help="a notebook the key may use (repeatable)")
        create.add_argument("--personal", action="store_true",
                            help="also Personal notes (implied by --all)")
        create.add_argument("--read-only", action="store_true",
                            help="memory:read only (no saving, editing or forgetting)")
        listing = sub.add_parser("list", help="list the account's connections")
        listing.add_argument("--user", required=True)
        revoke = sub.add_parser("revoke", help="revoke a connection for good")
        revoke.add_argument("--user", required=True)
        revoke.add_argument("id")

    def handle(self, *args: Any, action: str, user: str, **options: Any) -> None:
        from grove.identity import selectors, services
        from grove.kernel.actor import READ, WRITE, Actor
        from grove.kernel.errors import GroveError
        from grove.models import Account

        account = Account.objects.filter(username=user, is_active=True).first()
        if account is None:
            raise CommandError(f"no active account named {user!r}")
        owner = Actor.for_session(account.id)
        try:
            if action == "create":
                created = services.connection_create_key(
                    actor=owner, name=options["name"],
                    capabilities=[READ] if options["read_only"] else [READ, WRITE],
                    personal=options["personal"] or options["all"],
                    all_notebooks=options["all"], notebooks=options["notebook"])
                self.stderr.write(f"created {created.connection.name!r} "
                                  f"({created.connection.id}); the key is shown only now:")
                self.stdout.write(created.key)
            elif action == "list":
                for c in selectors.connection_list(actor=owner):
                    grant = "all notebooks" if c.grant.all_notebooks else \
                        f"{len(c.grant.notebooks)} notebook(s)"
                    if c.grant.personal:
                        grant += " + Personal"
                    self.stdout.write(f"{c.id}  {c.status:8} {c.kind:8} {c.key_prefix or '':14}"
                                      f" {','.join(c.capabilities):25} {grant:28} {c.name}")
            else:
                revoked = services.connection_revoke(actor=owner, connection_id=options["id"])
                self.stdout.write(f"revoked {revoked.name!r} ({revoked.id})")
        except GroveError as exc:
            raise CommandError(exc.message) from None
