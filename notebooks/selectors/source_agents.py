"""Which agents saved the caller's notes: the library's "Saved by" choices."""

from __future__ import annotations

from django.db import connection

from grove.kernel.actor import READ, Actor
from grove.kernel.tenancy import tenant
from notebooks.rules import SOURCE_AGENT_CHOICES_MAX

# A "loose index scan": the first agent, then each time the next one after it — one probe
# of the index `note_source_agents` per distinct agent, however many notes each has (a
# DISTINCT would read every note). The conditions repeat the index's, so it applies; row-
# level security adds the account rule to each probe. Text comparison is leakproof, so
# the policy does not keep `>` out of the index condition.
_DISTINCT_AGENTS = """
WITH RECURSIVE agents(name) AS (
    (SELECT n.source_agent FROM notebooks_note n
      WHERE n.account_id = %(account)s AND n.source_agent IS NOT NULL
        AND n.status <> 'deleted'
      ORDER BY n.source_agent LIMIT 1)
  UNION ALL
    SELECT (SELECT n.source_agent FROM notebooks_note n
             WHERE n.account_id = %(account)s AND n.source_agent IS NOT NULL
               AND n.status <> 'deleted' AND n.source_agent > agents.name
             ORDER BY n.source_agent LIMIT 1)
      FROM agents WHERE agents.name IS NOT NULL
)
SELECT name FROM agents WHERE name IS NOT NULL LIMIT %(limit)s
"""


def source_agent_list(*, actor: Actor, limit: int = SOURCE_AGENT_CHOICES_MAX) -> list[str]:
    """The distinct `source_agent` values of the account's notes that are not deleted
    (active, archived or expired: what the library's status filter shows), at most
    `limit` (the first in the database's order), sorted as a person reads them
    (ignoring case). The website owner's library only (the whole account: a
    connection's grant would need a read per granted notebook)."""
    actor.require_session()
    actor.require(READ)
    with tenant(actor):
        return source_agents_of(actor, limit=limit)


def source_agents_of(actor: Actor, *, limit: int = SOURCE_AGENT_CHOICES_MAX) -> list[str]:
    """`source_agent_list` in the caller's tenant transaction (a page that reads more in
    the same one: `notebooks.selectors.library.library_shelf`)."""
    actor.require_session()
    with connection.cursor() as cursor:
        cursor.execute(_DISTINCT_AGENTS, {"account": actor.account_id, "limit": limit})
        names = [name for (name,) in cursor.fetchall() if name]
    return sorted(names, key=lambda name: (name.casefold(), name))
