"""How the web process's database pool checks a connection before lending it
(settings `DATABASES["default"]["OPTIONS"]["pool"]["check"]`).

psycopg_pool's own check sends an empty query: a round trip to the server for every
request, before its first statement — on two shared cores a wake-up of the server's
process each time (docs/benchmarks.md, "HTTP overhead"). An idle connection's server
says nothing unless it is going away: a server that was stopped tells its clients
("terminating connection…") and closes their sockets, and a killed one's sockets are
closed by the kernel — either way the socket reads as ready. So a connection whose
socket has nothing to read is lent as it is, and one whose socket has something (or
that psycopg already knows is broken) gets the real check, and is replaced if it fails.
A restarted database is therefore reconnected to at once, as before.
"""

from __future__ import annotations

import select

import psycopg
from psycopg_pool import ConnectionPool


def check_idle_connection(conn: psycopg.Connection) -> None:
    """Raise if the pooled connection cannot be lent (the pool then opens another)."""
    if conn.closed or conn.broken:
        raise psycopg.OperationalError("the pooled connection is closed")
    poller = select.poll()  # (not select(): socket numbers may pass FD_SETSIZE)
    poller.register(conn.fileno(), select.POLLIN | select.POLLERR | select.POLLHUP)
    if poller.poll(0):
        ConnectionPool.check_connection(conn)  # the server spoke: ask it
