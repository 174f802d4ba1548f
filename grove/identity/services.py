"""Core use cases: owner setup, account settings, connections (API keys)."""

from __future__ import annotations

import hashlib
import secrets
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db import connection as db_connection
from django.utils import timezone

from grove.identity import selectors
from grove.identity.hygiene import clean_secret_action, clean_secret_patterns
from grove.identity.schemas import AccountSettingsOut, ConnectionOut, NewKeyOut, connection_state
from grove.identity.selectors import approval_request_open
from grove.kernel import operations
from grove.kernel.actor import ALL_CAPABILITIES, READ, WRITE, Actor
from grove.kernel.errors import Conflict, Invalid, NotFound
from grove.kernel.fences import expect_version
from grove.kernel.tenancy import tenant
from grove.kernel.validation import TIME_ZONE_MAX_CHARS, clean_time_zone
from grove.models import Account, Connection


def account_setup_owner(*, username: str, password: str, email: str = "") -> Account:
    """Create the first account. Refused once any account exists (SPEC §5)."""
    username = username.strip()
    if not username or len(username) > 150:
        raise Invalid("Choose a user name of 1–150 characters.", code="invalid_username")
    try:
        validate_password(password, Account(username=username, email=email))
    except ValidationError as exc:
        raise Invalid(" ".join(exc.messages), code="weak_password") from None
    with transaction.atomic():
        # Serialise concurrent setups: the table lock makes "no account yet" a fact.
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("LOCK TABLE grove_account IN SHARE ROW EXCLUSIVE MODE")
        if selectors.account_exists():
            raise Conflict("Grove already has an owner; sign in instead.", code="already_set_up")
        return Account.objects.create_user(
            username=username, password=password, email=email, is_staff=True, is_superuser=True
        )


def account_set_capture_paused(*, actor: Actor, paused: bool) -> AccountSettingsOut:
    """Pause or resume automatic capture for the whole account (website owner only);
    returns the settings as they are now."""
    actor.require_session()
    with transaction.atomic():
        account = Account.objects.select_for_update().get(id=actor.account_id)
        if paused and account.capture_paused_at is None:
            account.capture_paused_at = timezone.now()
        elif not paused:
            account.capture_paused_at = None
        account.save(update_fields=["capture_paused_at"])
    return AccountSettingsOut.of(account)


def account_set_time_zone(*, actor: Actor, time_zone: str) -> AccountSettingsOut:
    """The IANA zone the website shows this account's times in (website owner only).
    An unknown name is `invalid_time_zone` and changes nothing; returns the settings as
    they are now. Takes effect from the next request (the web middleware activates it)."""
    actor.require_session()
    name = time_zone.strip() if isinstance(time_zone, str) else ""
    try:
        zone = clean_time_zone(name) if name else None
    except Invalid:
        zone = None
    if zone is None:
        shown = f"“{name[:TIME_ZONE_MAX_CHARS]}” is not" if name else "Name"
        raise Invalid(f"{shown} a time zone: use an IANA name such as Europe/Paris, "
                      "America/New_York or UTC.", code="invalid_time_zone")
    with transaction.atomic():
        account = Account.objects.select_for_update().get(id=actor.account_id)
        account.time_zone = zone.key
        account.save(update_fields=["time_zone"])
    return AccountSettingsOut.of(account)


def account_set_secret_rules(*, actor: Actor, on_ingest: str, on_automatic: str,
                             on_explicit: str, patterns: Any) -> AccountSettingsOut:
    """What saves do with credentials they hold, by origin ("redact" or "refuse"), and
    the owner's own patterns (website owner only; `grove.identity.hygiene`). A bad
    action or pattern is `invalid_secret_action` / `invalid_secret_pattern` and changes
    nothing. Applies to the saves that come after; stored notes are not rewritten."""
    actor.require_session()
    actions = {name: clean_secret_action(value, what=label) for name, value, label in (
        ("secrets_on_ingest", on_ingest, "On ingest"),
        ("secrets_on_automatic", on_automatic, "On automatic captures"),
        ("secrets_on_explicit", on_explicit, "On explicit saves"))}
    cleaned = clean_secret_patterns(patterns)
    with transaction.atomic():
        account = Account.objects.select_for_update().get(id=actor.account_id)
        for name, value in actions.items():
            setattr(account, name, value)
        account.secret_patterns = cleaned
        account.save(update_fields=[*actions, "secret_patterns"])
    return AccountSettingsOut.of(account)


# -- connections: API keys (SPEC §5) ---------------------------------------------------------

KEY_PREFIX = "grv_"
_SECRET_BYTES = 32  # 256 bits of entropy
_SECRET_CHARS = 43  # token_urlsafe(32)
KEY_LENGTH = len(KEY_PREFIX) + _SECRET_CHARS + 32
CONTACT_RESOLUTION = timedelta(minutes=1)


def _key_digest(key: str) -> str:
    # The key is 256 random bits, so a plain SHA-256 is as good as a slow hash here
    # and lets the lookup be one indexed equality.
    return hashlib.sha256(key.encode()).hexdigest()


def _new_key(account_id: uuid.UUID) -> str:
    """`grv_` (for secret scanners) + 43 random URL-safe characters + the account id in
    hex, so the key names the tenant to look it up in (row-level security needs the
    account before any row is visible)."""
    secret = secrets.token_urlsafe(_SECRET_BYTES)
    assert len(secret) == _SECRET_CHARS
    return f"{KEY_PREFIX}{secret}{account_id.hex}"


def clean_connection_name(value: Any) -> str:
    """A connection's name, as one line: an app names itself when it registers, and
    its name is shown to agents (bylines, the brief) and to the owner."""
    name = " ".join(value.split()) if isinstance(value, str) else ""
    if not name or len(name) > 200:
        raise Invalid("Name the connection (1–200 characters).", code="invalid_name")
    return name


def clean_capabilities(value: Any) -> list[str]:
    if not isinstance(value, list | tuple) or not value \
            or any(c not in ALL_CAPABILITIES for c in value):
        raise Invalid("capabilities must be a non-empty list of memory:read, memory:write.",
                      code="invalid_capabilities")
    return sorted(set(value))


def _clean_grant_notebooks(actor: Actor, value: Any) -> list[uuid.UUID]:
    """Notebook ids of the caller's account that are not deleted (the grant names them;
    grants never inherit down the tree)."""
    if not isinstance(value, list | tuple) or len(value) > 1000:
        raise Invalid("notebooks must be a list of at most 1,000 notebook ids.",
                      code="invalid_grant")
    ids: list[uuid.UUID] = []
    for item in value:
        try:
            ids.append(item if isinstance(item, uuid.UUID) else uuid.UUID(str(item)))
        except ValueError:
            raise Invalid(f"{item!r} is not a notebook id.", code="invalid_grant") from None
    ids = sorted(set(ids), key=str)
    found = set(selectors.grantable_notebooks(actor).filter(id__in=ids)
                .values_list("id", flat=True))
    missing = [str(i) for i in ids if i not in found]
    if missing:
        raise NotFound(f"No such notebook: {missing[0]}.", code="notebook_not_found")
    return ids


def account_change_password(*, actor: Actor, current: str, new: str) -> Account:
    """The owner's new password, given the current one (`wrong_password`), checked like
    the first one (`weak_password`). Every other signed-in session ends with it (their
    session hash no longer matches); the caller keeps its own (the view re-signs it)."""
    actor.require_session()
    account = Account.objects.get(id=actor.account_id)
    if not account.check_password(current):
        raise Invalid("That is not your current password.", code="wrong_password")
    if new == current:
        raise Invalid("Choose a password other than the current one.", code="same_password")
    try:
        validate_password(new, account)
    except ValidationError as exc:
        raise Invalid(" ".join(exc.messages), code="weak_password") from None
    account.set_password(new)
    account.save(update_fields=["password"])
    return account


def connection_create_key(
    *, actor: Actor, name: str, capabilities: Sequence[str] = (READ, WRITE),
    personal: bool = False, all_notebooks: bool = False, notebooks: Sequence[Any] = (),
    operation_id: uuid.UUID | str | None = None,
) -> NewKeyOut:
    """Create an API key connection (website owner session, or the local `grove key
    create` command acting as the owner). Returns the key once; only its hash is kept.
    With an `operation_id` (the website's form), the same request again — a reload
    that posts the form twice — creates nothing and is refused (`key_already_created`):
    the secret cannot be shown again."""
    actor.require_session()
    name = clean_connection_name(name)
    capabilities = clean_capabilities(list(capabilities))
    op_id = None if operation_id is None else operations.coerce_operation_id(operation_id)
    with tenant(actor):
        notebook_ids = _clean_grant_notebooks(actor, list(notebooks))
        if all_notebooks and notebook_ids:
            raise Invalid("Grant all notebooks or a list of notebooks, not both.",
                          code="invalid_grant")
        if op_id is not None and operations.claim(
                actor=actor, operation_id=op_id, action="connection_create_key",
                arguments={"name": name, "capabilities": capabilities,
                           "personal": bool(personal), "all": bool(all_notebooks),
                           "notebooks": sorted(str(n) for n in notebook_ids)}):
            raise Conflict("This key was created already, and its secret is shown only "
                           "once. If you did not copy it, revoke it below and create "
                           "another.", code="key_already_created")
        key = _new_key(actor.account_id)
        row = Connection.objects.create(
            account_id=actor.account_id, name=name, kind=Connection.Kind.API_KEY,
            status=Connection.Status.ACTIVE, capabilities=capabilities,
            grant_personal=bool(personal), grant_all=bool(all_notebooks),
            grant_notebooks=notebook_ids, key_prefix=key[: len(KEY_PREFIX) + 8],
            key_hash=_key_digest(key),
        )
        if op_id is not None:  # the connection, never the secret
            operations.record(actor=actor, operation_id=op_id,
                              result={"connectionId": str(row.id)}, target_note_id=None)
        return NewKeyOut(connection=ConnectionOut.of(row), key=key)


def _access_connection(actor: Actor, connection_id: uuid.UUID | str) -> Connection:
    """The connection row, locked (caller's tenant transaction)."""
    try:
        wanted = uuid.UUID(str(connection_id))
    except ValueError:
        raise NotFound("No such connection.", code="not_found") from None
    row = Connection.objects.select_for_update().filter(
        id=wanted, account_id=actor.account_id).first()
    if row is None:
        raise NotFound("No such connection.", code="not_found")
    return row


KEEP: Any = object()  # a field left as it is


def connection_update(
    *, actor: Actor, connection_id: uuid.UUID | str, expected_state: str,
    name: str | None = None, capabilities: Sequence[str] | None = None,
    personal: bool | None = None, all_notebooks: bool | None = None,
    notebooks: Sequence[Any] | None = None, refuse_pending: bool = False,
    home_notebook: Any = KEEP,
) -> ConnectionOut:
    """Rename a connection or change its capabilities and grant (website owner only).
    `home_notebook`: its home notebook (None: none), which the grant must hold
    (`home_not_granted`); a grant changed so that it no longer holds the home clears it.
    `expected_state` must match the current `state`, else Conflict
    (`connection_conflict`) and nothing changes. A revoked connection cannot change.
    With `refuse_pending` (the website, where approving is how a pending client gets its
    grant) a pending connection is refused (`connection_pending`)."""
    actor.require_session()
    if not isinstance(expected_state, str) or not expected_state:
        raise Invalid("expectedState is required (the state you last saw).",
                      code="expected_state_required")
    with tenant(actor):
        row = _access_connection(actor, connection_id)
        state = connection_state(row)
        if state != expected_state:  # (only then is the current shape worth building)
            expect_version(what="connection", actual=state, expected=expected_state,
                           code="connection_conflict", name_current=False,
                           message="The connection changed since you loaded it; reload and "
                                   "retry.", current=ConnectionOut.of(row).to_json())
        if row.status == Connection.Status.REVOKED:
            raise Conflict("A revoked connection cannot be changed or reactivated.",
                           code="connection_revoked")
        if refuse_pending and row.status == Connection.Status.PENDING:
            raise Conflict(f"{row.name} waits for your approval: review its request to "
                           "choose what it may do.", code="connection_pending")
        if name is not None:
            row.name = clean_connection_name(name)
        if capabilities is not None:
            row.capabilities = clean_capabilities(list(capabilities))
        if personal is not None:
            row.grant_personal = bool(personal)
        if all_notebooks and notebooks:
            raise Invalid("Grant all notebooks or a list of notebooks, not both.",
                          code="invalid_grant")
        if notebooks is not None:  # an explicit list replaces "all"
            row.grant_notebooks = _clean_grant_notebooks(actor, list(notebooks))
            row.grant_all = False
        if all_notebooks is not None:
            row.grant_all = bool(all_notebooks)
            if row.grant_all:
                row.grant_notebooks = []
        if home_notebook is not KEEP:
            row.home_notebook_id = None if home_notebook is None else _clean_home(
                actor, home_notebook)
        if row.home_notebook_id is not None and not (
                row.grant_all or row.home_notebook_id in row.grant_notebooks):
            if home_notebook is not KEEP and home_notebook is not None:
                raise Invalid("Its home notebook must be one it is granted.",
                              code="home_not_granted")
            row.home_notebook_id = None  # the grant no longer holds it
        row.pending_request = None  # a manual edit invalidates an outstanding request
        row.save()
        return ConnectionOut.of(row)


def _clean_home(actor: Actor, value: Any) -> uuid.UUID:
    [home] = _clean_grant_notebooks(actor, [value])
    return home


def connection_revoke(*, actor: Actor, connection_id: uuid.UUID | str) -> ConnectionOut:
    """Revoke a connection for good: refused on its very next request, never reactivated.
    Revoking twice returns the revoked connection (website owner only)."""
    actor.require_session()
    with tenant(actor):
        row = _access_connection(actor, connection_id)
        if row.status != Connection.Status.REVOKED:
            row.status, row.revoked_at = Connection.Status.REVOKED, timezone.now()
            row.pending_request = None
            row.save(update_fields=["status", "revoked_at", "pending_request"])
            if row.kind == Connection.Kind.OAUTH:
                # Same transaction: the client's tokens end with the connection.
                _revoke_client_tokens(account_id=row.account_id,
                                      client_id=str(row.oauth_client_id))
        return ConnectionOut.of(row)


def _revoke_client_tokens(*, account_id: uuid.UUID, client_id: str) -> None:
    """Revoking an OAuth connection also ends the client's tokens for this account, so it
    must sign in again (and be approved again) to come back. (Here, not in
    `grove.identity.oauth`: that module's resource-server side calls this one.)"""
    from oauth2_provider.models import AccessToken, RefreshToken

    for refresh in RefreshToken.objects.filter(user_id=account_id, revoked__isnull=True,
                                               application__client_id=client_id):
        refresh.revoke()
    AccessToken.objects.filter(user_id=account_id, application__client_id=client_id).delete()


def connection_authenticate(key: str) -> Actor | None:
    """The actor for an API key, or None (unknown, malformed, revoked, inactive account).
    Read from the database on every request: nothing can outlive a revocation. Records
    the contact at most once a minute.

    One statement, outside any transaction: the security-definer `grove_key_connection_home`
    (grove 0011) finds the active key of the active account the key names by the key's
    hash — what a lookup in that account's tenant transaction would find — and records
    the contact in the same statement."""
    if not key.startswith(KEY_PREFIX) or len(key) != KEY_LENGTH:
        return None
    try:
        account_id = uuid.UUID(hex=key[-32:])
    except ValueError:
        return None
    with db_connection.cursor() as cursor:
        cursor.execute("SELECT id, capabilities, grant_personal, grant_all, grant_notebooks, "
                       "home_notebook_id "
                       "FROM grove_key_connection_home(%s, %s, make_interval(secs => %s))",
                       [account_id, _key_digest(key), CONTACT_RESOLUTION.total_seconds()])
        row = cursor.fetchone()
    if row is None:
        return None
    connection_id, capabilities, personal, all_notebooks, notebooks, home = row
    return Actor.of_active_connection(
        account_id=account_id, connection_id=connection_id, capabilities=capabilities,
        personal=personal, all_notebooks=all_notebooks, notebooks=notebooks, home=home)


# -- connections: OAuth clients (SPEC §5 "OAuth clients need owner approval") -------------

APPROVAL_REQUEST_TTL = timedelta(minutes=10)


def connection_for_oauth_token(
    *, account_id: uuid.UUID, client_id: str, client_name: str, token_issued_at: datetime,
) -> Connection | None:
    """The connection an OAuth access token speaks for: the client's live connection in
    the account, or a new pending one. None when the client's last connection was
    revoked after this token was issued (reapproval needs a token from after the
    cutoff). Records the contact at most once a minute."""
    with tenant(account_id):
        live = Connection.objects.filter(account_id=account_id, kind=Connection.Kind.OAUTH,
                                         oauth_client_id=client_id).exclude(
            status=Connection.Status.REVOKED).first()
        if live is None:
            revoked = Connection.objects.filter(
                account_id=account_id, kind=Connection.Kind.OAUTH, oauth_client_id=client_id,
                status=Connection.Status.REVOKED).order_by("-revoked_at").first()
            if revoked is not None and revoked.revoked_at is not None \
                    and token_issued_at <= revoked.revoked_at:
                return None
            try:
                with transaction.atomic():
                    live = Connection.objects.create(
                        account_id=account_id, kind=Connection.Kind.OAUTH,
                        status=Connection.Status.PENDING, oauth_client_id=client_id,
                        name=clean_connection_name((client_name or "").strip()[:200]
                                                   or "OAuth client"),
                        capabilities=[])
            except IntegrityError:  # a concurrent first request made it
                live = Connection.objects.get(account_id=account_id, oauth_client_id=client_id,
                                              kind=Connection.Kind.OAUTH,
                                              status__in=[Connection.Status.PENDING,
                                                          Connection.Status.ACTIVE])
        now = timezone.now()
        if live.last_used_at is None or live.last_used_at < now - CONTACT_RESOLUTION:
            Connection.objects.filter(id=live.id).update(last_used_at=now)
        return live


def connection_request_approval(
    *, account_id: uuid.UUID, connection_id: uuid.UUID, redirect_host: str = "",
) -> dict[str, Any]:
    """The outstanding approval request of a pending OAuth connection: the current one
    while it is fresh, else a new one valid for 10 minutes (stored, bounded, on the row)."""
    with tenant(account_id):
        row = Connection.objects.select_for_update().get(id=connection_id,
                                                         account_id=account_id)
        current: dict[str, Any] = row.pending_request or {}
        if approval_request_open(current):
            return current
        now = timezone.now()
        row.pending_request = {
            "id": str(uuid.uuid4()), "expiresAt": (now + APPROVAL_REQUEST_TTL).isoformat(),
            "clientName": row.name[:200], "redirectHost": redirect_host[:255]}
        row.save(update_fields=["pending_request"])
        return row.pending_request


def connection_approve(
    *, actor: Actor, connection_id: uuid.UUID | str, request_id: uuid.UUID | str,
    capabilities: Sequence[str], personal: bool, all_notebooks: bool,
    notebooks: Sequence[Any] = (),
) -> tuple[ConnectionOut, bool]:
    """The owner approves a pending OAuth client's request with capabilities and a
    grant (website owner only). Returns the connection and whether this call approved it:
    approving the same request again changes nothing and returns it as it is. Refused: a
    revoked connection (`connection_revoked`), an unknown, replaced or expired request
    (`approval_request_expired`), notebooks that cannot be granted (NotFound
    `notebook_not_found`)."""
    actor.require_session()
    try:
        wanted = uuid.UUID(str(request_id))
    except ValueError:
        raise Invalid("request must be the id from the approval link.",
                      code="invalid_request_id") from None
    with tenant(actor):
        row = _access_connection(actor, connection_id)
        if row.kind != Connection.Kind.OAUTH:
            raise NotFound("No such connection.", code="not_found")
        if row.status == Connection.Status.REVOKED:
            raise Conflict("This connection was revoked; the app must sign in again.",
                           code="connection_revoked")
        if row.status == Connection.Status.ACTIVE and row.approved_request_id == wanted:
            return ConnectionOut.of(row), False  # approved already: the same answer
        if not approval_request_open(row.pending_request, wanted):
            raise Conflict("This approval request has expired or was replaced. Ask the app "
                           "to try again; it will show a new link.",
                           code="approval_request_expired")
        if all_notebooks and notebooks:
            raise Invalid("Grant all notebooks or a list of notebooks, not both.",
                          code="invalid_grant")
        row.capabilities = clean_capabilities(list(capabilities))
        row.grant_personal = bool(personal)
        row.grant_all = bool(all_notebooks)
        row.grant_notebooks = [] if all_notebooks else _clean_grant_notebooks(
            actor, list(notebooks))
        row.status = Connection.Status.ACTIVE
        row.pending_request = None
        row.approved_request_id = wanted
        row.save()
        return ConnectionOut.of(row), True


def connection_deny(*, actor: Actor, connection_id: uuid.UUID | str,
                    request_id: Any) -> tuple[ConnectionOut, bool]:
    """The owner denies a pending OAuth client's request (website owner only): revoked,
    as by `connection_revoke`, only while `request_id` is its open request. Returns
    (connection, denied); a request no longer open changes nothing. Any connection but
    an OAuth one of the account is NotFound."""
    actor.require_session()
    with tenant(actor):
        row = _access_connection(actor, connection_id)  # locked: one answer wins
        if row.kind != Connection.Kind.OAUTH:
            raise NotFound("No such connection.", code="not_found")
        if row.status != Connection.Status.PENDING \
                or not approval_request_open(row.pending_request, request_id):
            return ConnectionOut.of(row), False
        return connection_revoke(actor=actor, connection_id=row.id), True
