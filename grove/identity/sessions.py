"""The website's session store: Django's database sessions, keyed by a MAC of the cookie.

`django_session` is readable by the runtime database role, and Django's own backend
keeps the cookie's value as the row's key — so one read of the table would hand out
every live session. Here the row's key is `stored_key(cookie)`: an HMAC-SHA256 of the
cookie's value under a key derived from `SECRET_KEY`, cut to the column's 40 hex
characters (160 bits). The cookie opens its row; the row's key opens nothing (it is
MACed again when presented), and without `SECRET_KEY` no one can make a row for a cookie
of their choosing either (a copy of someone's signed session data under a key one
knows). Session data stays as Django writes it (signed with `SECRET_KEY`).

Rows written by Django's backend are converted by migration `grove 0015` (the same MAC,
computed there), so nobody is signed out by the upgrade. Rotating `SECRET_KEY` ends every
session, as it did before (Django's session data and auth hash are signed with it).
"""

from __future__ import annotations

from typing import Any

from django.contrib.sessions.backends.db import SessionStore as DatabaseStore
from django.utils.crypto import salted_hmac

SALT = "grove.identity.sessions"  # also written in migration grove 0015: keep them equal
STORED_KEY_CHARS = 40  # django_session.session_key is varchar(40)


def stored_key(session_key: str) -> str:
    """The row key of the session whose cookie is `session_key`."""
    return salted_hmac(SALT, session_key, algorithm="sha256").hexdigest()[:STORED_KEY_CHARS]


class SessionStore(DatabaseStore):
    """Django's database store with every read and write of a row going through
    `stored_key`. (Keep the class name: Django salts the session data's signature with
    it, `django.contrib.sessions.SessionStore`, so existing data still reads.)"""

    def _get_session_from_db(self) -> Any:
        return self._row_of(self.session_key)

    async def _aget_session_from_db(self) -> Any:
        from asgiref.sync import sync_to_async

        return await sync_to_async(self._row_of)(self.session_key)

    def _row_of(self, session_key: str | None) -> Any:
        from django.core.exceptions import SuspiciousOperation
        from django.utils import timezone

        try:
            if session_key is None:
                raise self.model.DoesNotExist
            return self.model.objects.get(session_key=stored_key(session_key),
                                          expire_date__gt=timezone.now())
        except (self.model.DoesNotExist, SuspiciousOperation):
            self._session_key = None
            return None

    def exists(self, session_key: str) -> bool:
        return self.model.objects.filter(session_key=stored_key(session_key)).exists()

    async def aexists(self, session_key: str) -> bool:
        return await self.model.objects.filter(session_key=stored_key(session_key)).aexists()

    def create_model_instance(self, data: dict[str, Any]) -> Any:
        row = super().create_model_instance(data)
        row.session_key = stored_key(row.session_key)
        return row

    async def acreate_model_instance(self, data: dict[str, Any]) -> Any:
        row = await super().acreate_model_instance(data)
        row.session_key = stored_key(row.session_key)
        return row

    def delete(self, session_key: str | None = None) -> None:
        key = self.session_key if session_key is None else session_key
        if key is not None:
            self.model.objects.filter(session_key=stored_key(key)).delete()

    async def adelete(self, session_key: str | None = None) -> None:
        key = self.session_key if session_key is None else session_key
        if key is not None:
            await self.model.objects.filter(session_key=stored_key(key)).adelete()
