"""A working session's handoff (issue 39): what `grove hook session-end` and
`pre-compact` send when a client's session ends or is compacted — its last request, the
outcome, the files touched and an excerpt of the conversation — saved as the session's
handoff note: kind `handoff`, the session id as its task id, captured automatically.

With a configured model (and its budget not spent), the note is the model's summary of
the session, with the files touched listed under it; otherwise — or when the model
fails — the plain facts. The excerpt is read by the model alone and never saved: the note
is never the raw transcript. The save is `note_remember`'s: the owner's pause on
automatic capture refuses it (`capture_paused`), credentials are screened by the rules
for automatic captures, and a second end of the same session updates its handoff (the
live handoff of a task) instead of adding one. Model output is data: it is saved as
text and rendered like any note."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence

from ask import providers
from ask.services.budget import model_calls_charge
from grove.identity.hygiene import Origin, screen
from grove.kernel import operations
from grove.kernel.actor import WRITE, Actor
from grove.kernel.errors import Invalid, RateLimited
from grove.kernel.tenancy import tenant
from notebooks import services as notes
from notebooks.models import CONTENT_MAX_CHARS, Capture
from notebooks.rules import HOME
from notebooks.schemas.notes import RememberOut
from notebooks.services.frame import replay, require_capture_allowed

SESSION_ID_MAX_CHARS = 200
CLIENT_MAX_CHARS = 100
REQUEST_MAX_CHARS, OUTCOME_MAX_CHARS, EXCERPT_MAX_CHARS = 2_000, 4_000, 12_000
FILES_MAX, FILE_MAX_CHARS = 100, 500
SUMMARY_SECONDS = 30  # the model's whole time (every try) for one summary


def _text(value: object, limit: int, what: str, *, required: bool = False) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str) or len(value) > limit:
        raise Invalid(f"{what} is text of at most {limit:,} characters.",
                      code="invalid_session")
    if required and not value.strip():
        raise Invalid(f"{what} is required.", code="invalid_session")
    return value.strip()


def _facts(client: str, session_id: str, request: str, outcome: str,
           files: Sequence[str]) -> str:
    parts = [f"Session {session_id} ({client}) ended."]
    if request:
        parts.append(f"Last request:\n\n{request}")
    if outcome:
        parts.append(f"Outcome:\n\n{outcome}")
    if files:
        parts.append(_files(files))
    return "\n\n".join(parts)


def _files(files: Sequence[str]) -> str:
    return "Files touched:\n\n" + "\n".join(f"- `{name}`" for name in files)


def handoff_from_session(*, actor: Actor, operation_id: uuid.UUID | str, session_id: str,
                         client: str, request: str = "", outcome: str = "",
                         files: Sequence[str] = (), excerpt: str = "") -> RememberOut:
    """Save the session's handoff (see the module). Raises Invalid for input out of
    bounds, and what `note_remember` refuses with (`capture_paused`, `secret_detected`, …)
    — the pause and credentials before the model is asked. A retry with the same
    operation id answers the handoff that was saved (the model is not asked again)."""
    session_id = _text(session_id, SESSION_ID_MAX_CHARS, "sessionId", required=True)
    client = _text(client, CLIENT_MAX_CHARS, "client", required=True)
    request = _text(request, REQUEST_MAX_CHARS, "request")
    outcome = _text(outcome, OUTCOME_MAX_CHARS, "outcome")
    excerpt = _text(excerpt, EXCERPT_MAX_CHARS, "excerpt")
    if not isinstance(files, Sequence) or isinstance(files, str) or len(files) > FILES_MAX:
        raise Invalid(f"files is a list of at most {FILES_MAX} paths.", code="invalid_session")
    paths = [_text(name, FILE_MAX_CHARS, "each file") for name in files]
    paths = [name for name in dict.fromkeys(paths) if name]
    if not (request or outcome):
        raise Invalid("A session's handoff needs its last request or its outcome.",
                      code="invalid_session")
    actor.require(WRITE)
    op_id = operations.coerce_operation_id(operation_id)
    with tenant(actor):
        done = operations.recorded(actor, op_id)
        if done is not None:  # a retry: the handoff that was saved, not a new summary
            return replay(actor, done, RememberOut.model_validate, gone_if_deleted=True,
                          note_ids=lambda out: [out.note.id] if out.note else [])
        require_capture_allowed(actor, Capture.AUTOMATIC)  # before the model sees a word
    # Credentials go before anything else sees the text — the model included.
    request, outcome, excerpt = (screen(actor, text, origin=Origin.AUTOMATIC).text
                                 for text in (request, outcome, excerpt))
    content = _facts(client, session_id, request, outcome, paths)
    if providers.configured():
        try:
            model_calls_charge(actor=actor)
            summary = providers.summarise_session(
                content + (f"\n\nConversation excerpt (oldest first):\n\n{excerpt}"
                           if excerpt else ""),
                deadline=time.monotonic() + SUMMARY_SECONDS)
            content = summary.strip() + ("\n\n" + _files(paths) if paths else "")
        except (providers.ProviderUnavailable, RateLimited):
            pass  # the plain facts, then
    content = screen(actor, content, origin=Origin.AUTOMATIC).text  # the model's words too
    if len(content) > CONTENT_MAX_CHARS:  # a handoff is a memory record: its limit
        content = content[:CONTENT_MAX_CHARS - 1].rstrip() + "…"
    return notes.note_remember(actor=actor, operation_id=op_id, content=content,
                               kind="handoff", task_id=session_id, notebook_id=HOME,
                               capture="automatic", source_agent=client)
