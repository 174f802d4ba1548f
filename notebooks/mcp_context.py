"""What an agent reads first, over MCP (SPEC §7, §10): the `brief`, `whoami`,
`recent_activity` and `update_vision` tools, the resources `note://{id}`,
`note://{id}@{version}`, `notebook://{id}` and `brief://{notebookId}`, and three prompts.

The tools call the same selectors and service as the REST routes (notebooks/api_context.py)
with the same argument shapes; resources and prompts read through the same selectors,
so a resource is exactly as reachable as the tool that reads the same thing — an
unknown, foreign or ungranted id is the same `NotFound`. `grove/interfaces/mcp.py` serves
all of it (grove/interfaces/mcp_catalog.py declares the shapes).
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from grove.interfaces.mcp import Tool
from grove.interfaces.mcp_catalog import (
    Prompt,
    PromptArgument,
    PromptMessage,
    Resource,
    ResourceContent,
    ResourceProvider,
    ResourceTemplate,
)
from grove.interfaces.rendering import note_title
from grove.kernel.actor import READ, Actor
from grove.kernel.errors import Invalid, NotFound
from grove.kernel.paging import Cursor, caller_binding, cursor_read, cursor_write, seek_after
from grove.kernel.tenancy import tenant
from notebooks import rules, selectors, services
from notebooks.models import Kind, Note, Revision
from notebooks.schemas.arguments import parse_place, place_of
from notebooks.schemas.briefs import (
    ActivityArgs,
    ActivityPage,
    BriefArgs,
    BriefOut,
    UpdateVisionArgs,
    VisionSaved,
    WhoamiArgs,
    WhoamiOut,
)
from notebooks.schemas.truth import TruthArgs, TruthOut
from notebooks.selectors.access import (
    access_note,
    access_notebook,
    live_notebooks,
    notes_live,
    require_personal,
)

# -- tools -------------------------------------------------------------------------------------


def _brief(actor: Actor, args: BriefArgs) -> BriefOut:
    return selectors.brief_get(actor=actor, **args.service_kwargs())


def _whoami(actor: Actor, args: WhoamiArgs) -> WhoamiOut:
    return selectors.whoami(actor=actor)


def _activity(actor: Actor, args: ActivityArgs) -> ActivityPage:
    return selectors.activity_list(actor=actor, **args.service_kwargs())


def _truth(actor: Actor, args: TruthArgs) -> TruthOut:
    return selectors.truth_get(actor=actor, notebook_id=args.notebook_id, full=args.full)


def _update_vision(actor: Actor, args: UpdateVisionArgs) -> VisionSaved:
    saved = services.vision_update(
        actor=actor, operation_id=args.operation_id or uuid.uuid4(),
        notebook_id=args.notebook_id, content=args.content,
        expected_version=args.expected_version)
    if saved.notebook_id is None:
        return VisionSaved(version=saved.version)
    return VisionSaved(notebook_id=f"notebook:{saved.notebook_id}", version=saved.version)


TOOLS = [
    Tool("brief", "Start here: your brief",
         "Your first read: what the work is for (vision), who you are and may do, live "
         "handoffs, recent changes, the preferences, facts and decisions that apply "
         "(pinned first) and notes related to focus — within budgetTokens, past which "
         "notes become index lines (get_note reads them). meta counts returned, indexed, "
         "dropped.",
         BriefArgs, BriefOut, _brief, read_only=True),
    Tool("whoami", "Who am I",
         "This connection's name, capabilities (read/write), whether it sees Personal "
         "notes, the notebooks it may use, and whether automatic capture is paused.",
         WhoamiArgs, WhoamiOut, _whoami, read_only=True),
    Tool("recent_activity", "Recent activity",
         "Changes (revisions) since a time, newest first: note, version, what changed, "
         "and which connection made it. Pass meta.nextCursor back as cursor.",
         ActivityArgs, ActivityPage, _activity, read_only=True),
    Tool("truth", "Ground truth",
         "The notes a notebook (or, without notebookId, the account) declares "
         "authoritative, unranked, and its claims known to be false. state: own, "
         "inherited or none; policy restrict: only declared notes answer for facts, "
         "decisions and solutions there. Revisions of declared notes wait for the owner.",
         TruthArgs, TruthOut, _truth, read_only=True),
    Tool("update_vision", "Update a vision",
         "Replace a notebook's vision (what its work is for; it heads every brief) as a "
         "new version — or the account's, without notebookId. Send the version you read "
         "as expectedVersion.",
         UpdateVisionArgs, VisionSaved, _update_vision, read_only=False),
]

# -- resources ---------------------------------------------------------------------------------

_UUID = r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}"
_NOTE_URI = re.compile(rf"note://({_UUID})(?:@([1-9][0-9]{{0,8}}))?", re.IGNORECASE)
_NOTEBOOK_URI = re.compile(rf"notebook://({_UUID})", re.IGNORECASE)
_BRIEF_URI = re.compile(rf"brief://({_UUID}|personal|all)", re.IGNORECASE)
NOTEBOOK_RESOURCE_NOTES = 200  # notes a notebook:// resource lists (the rest are counted)
RESOURCE_PAGE = 100
RESOURCE_CURSOR_SALT = "grove.mcp.resources"
NOTE_ORDER = ("-created_at", "-id")

TEMPLATES = [
    ResourceTemplate("note://{id}", "note", "A note",
                     "A note as it is now (markdown), by its id."),
    ResourceTemplate("note://{id}@{version}", "note-revision", "A note at one version",
                     "Exactly that revision of a note, as Ask and recall cite it."),
    ResourceTemplate("notebook://{id}", "notebook", "A notebook's notes",
                     "The live notes of a notebook: id, kind and first line of each."),
    ResourceTemplate("brief://{notebookId}", "brief", "A brief",
                     "The brief for a notebook (or `personal`, or `all`): what the brief "
                     "tool gives with its defaults."),
]


def _note_text(note: Note | Revision, names: dict[uuid.UUID, str]) -> str:
    place = names.get(note.notebook_id, "a notebook") if note.notebook_id else "Personal"
    when = note.updated_at if isinstance(note, Note) else note.created_at
    head = f"{note.versioned_id} — {note.kind}, {place}, {when:%Y-%m-%d}"
    if note.task_id:
        head += f", task {note.task_id}"
    return f"{head}\n\n{note.content}\n"


def _read_note(actor: Actor, note_id: str, version: str | None) -> str:
    with tenant(actor):
        actor.require(READ)
        note = access_note(actor, note_id)
        names = rules.notebook_paths(live_notebooks(actor))
        if version is None:
            return _note_text(note, names)
        revision = Revision.objects.filter(note=note, version=int(version)).first()
        if revision is None:
            raise NotFound("No such note version.", code="version_not_found")
        return _note_text(revision, names)


def _read_notebook(actor: Actor, notebook_id: str) -> str:
    with tenant(actor):
        actor.require(READ)
        notebook = access_notebook(actor, notebook_id)
        notes = notes_live(actor).filter(notebook_id=notebook.id).order_by("-updated_at", "id")
        shown = list(notes[:NOTEBOOK_RESOURCE_NOTES])
        total = len(shown) if len(shown) < NOTEBOOK_RESOURCE_NOTES else notes.count()
    lines = [f"# {notebook.name} (notebook:{notebook.id}): {total} live notes, newest first"]
    lines += [f"- {n.versioned_id} {n.kind}, {n.updated_at:%Y-%m-%d}: "
              f"{note_title(n.content, 100)}" for n in shown]
    if total > len(shown):
        lines.append(f"- … and {total - len(shown)} more (list_notes pages through them)")
    return "\n".join(lines) + "\n"


def _read_brief(actor: Actor, place: str) -> str:
    scope: Any = rules.EVERYWHERE if place.lower() == "all" else place_of(
        "personal" if place.lower() == "personal" else place)
    brief = selectors.brief_get(actor=actor, notebook_id=scope)
    assert brief.markdown is not None
    return brief.markdown


def read_resource(actor: Actor, uri: str) -> list[ResourceContent] | None:
    """The contents of a `note://`, `notebook://` or `brief://` URI (None: not ours)."""
    scheme = uri.split("://", 1)[0].lower() if "://" in uri else ""
    if scheme not in ("note", "notebook", "brief"):
        return None
    if match := _NOTE_URI.fullmatch(uri):
        text = _read_note(actor, match.group(1), match.group(2))
    elif match := _NOTEBOOK_URI.fullmatch(uri):
        text = _read_notebook(actor, match.group(1))
    elif match := _BRIEF_URI.fullmatch(uri):
        text = _read_brief(actor, match.group(1))
    else:
        raise NotFound("No such resource.", code="resource_not_found")
    return [ResourceContent(uri=uri, text=text)]


def list_resources(actor: Actor, cursor: str | None) -> tuple[list[Resource], str | None]:
    """The resources this caller may read, a page at a time: the briefs (everything,
    Personal when granted, each live notebook) and each live notebook's note list, then
    every live note, newest first. The cursor is signed and bound to the caller."""
    actor.require(READ)
    opened = cursor_read(cursor, salt=RESOURCE_CURSOR_SALT, binding=caller_binding(actor),
                         fingerprint="resources")
    phase, after = ("places", None) if opened.key is None else (opened.key[0], opened.key[1:])
    found: list[Resource] = []
    with tenant(actor):
        actor.require(READ)
        if phase == "places":
            found.append(Resource("brief://all", "brief-all", "Brief: everything"))
            if actor.grant.personal:
                found.append(Resource("brief://personal", "brief-personal",
                                      "Brief: Personal"))
            paths = rules.notebook_paths(live_notebooks(actor))
            for nb_id, path in sorted(paths.items(), key=lambda item: (item[1].lower(),
                                                                      str(item[0]))):
                found += [Resource(f"brief://{nb_id}", f"brief-{nb_id}", f"Brief: {path}"),
                          Resource(f"notebook://{nb_id}", f"notebook-{nb_id}",
                                   f"Notebook: {path}")]
            phase, after = "notes", None
        notes = notes_live(actor)
        if after:
            notes = notes.filter(seek_after(NOTE_ORDER, after))
        rows = list(notes.order_by(*NOTE_ORDER)[:RESOURCE_PAGE + 1])
    more = len(rows) > RESOURCE_PAGE
    rows = rows[:RESOURCE_PAGE]
    found += [Resource(f"note://{n.id}", f"note-{n.id}", note_title(n.content, 80) or n.kind)
              for n in rows]
    next_cursor = None
    if more and rows:
        last = rows[-1]
        next_cursor = cursor_write(Cursor(binding=opened.binding, fingerprint="resources",
                                          key=("notes", last.created_at, last.id)),
                                   salt=RESOURCE_CURSOR_SALT)
    return found, next_cursor


RESOURCES = ResourceProvider(schemes=("note", "notebook", "brief"), templates=TEMPLATES,
                             list_page=list_resources, read=read_resource)

# -- prompts -----------------------------------------------------------------------------------

NOTEBOOK_ARGUMENT = PromptArgument(
    "notebookId", "A notebook id (`<uuid>` or `notebook:<uuid>`), or \"personal\"; "
    "omitted: everything this connection may read.")


def _scope_argument(actor: Actor, arguments: dict[str, str]) -> Any:
    """The place a prompt names, checked as the tools check it: a notebook the caller may
    read (NotFound otherwise), Personal when granted, or everything."""
    value = (arguments.get("notebookId") or "").strip()
    if not value:
        return rules.EVERYWHERE
    place = parse_place(value)
    if place is None:
        require_personal(actor)
        return None
    with tenant(actor):
        return access_notebook(actor, place).id


def _load_context(actor: Actor, arguments: dict[str, str]) -> tuple[str, list[PromptMessage]]:
    brief = selectors.brief_get(actor=actor, notebook_id=_scope_argument(actor, arguments),
                                focus=arguments.get("focus") or None,
                                time_zone=arguments.get("timeZone") or "UTC")
    assert brief.markdown is not None
    return "Your Grove brief", [PromptMessage("user", (
        "Here is my Grove brief: what this work is for, who you are in Grove and what you "
        "may do, handoffs in progress, what changed lately and the notes that apply. Work "
        "from it in this session; when you rely on a note, cite its id "
        "(note:<id>@<version>); read index entries in full with get_note when you need "
        "them.\n\n" + brief.markdown))]


def _save_handoff(actor: Actor, arguments: dict[str, str]) -> tuple[str, list[PromptMessage]]:
    task = rules.clean_task_id((arguments.get("taskId") or "").strip() or None)
    if task is None:
        raise Invalid("taskId is required: the task this handoff is for.",
                      code="invalid_arguments")
    scope = _scope_argument(actor, arguments)
    where = ("" if scope is rules.EVERYWHERE else
             ', "notebookId": "personal"' if scope is None else f', "notebookId": "{scope}"')
    current = _live_handoff(actor, task, scope)
    now = (f"\n\nThe task's live handoff now ({current.versioned_id}) — saving with the same "
           f"taskId replaces it, so carry over what still holds:\n\n{current.content}"
           if current is not None else "")
    text = (
        f"Save a handoff for task \"{task}\" so that another session (or another agent) "
        "can pick it up cold. Call the `remember` tool once with "
        f"{{\"kind\": \"handoff\", \"taskId\": \"{task}\"{where}, \"content\": …}} where "
        "the content is markdown with: **Goal** (one line), **Status** (done / in "
        "progress / blocked), **Done so far**, **Next steps** (concrete, in order), "
        "**Open questions**, and **Where things are** (files, branches, links, commands). "
        "Be specific; leave out secrets. Then tell me the id it was saved as." + now)
    return f"Save a handoff for {task}", [PromptMessage("user", text)]


def _live_handoff(actor: Actor, task: str, scope: Any) -> Note | None:
    with tenant(actor):
        actor.require(READ)
        handoffs = notes_live(actor).filter(kind=Kind.HANDOFF, task_id=task)
        if scope is None:
            handoffs = handoffs.filter(notebook__isnull=True)
        elif scope is not rules.EVERYWHERE:
            handoffs = handoffs.filter(notebook_id=access_notebook(actor, scope).id)
        return handoffs.order_by("-updated_at").first()


def _end_of_session(actor: Actor, arguments: dict[str, str]
                    ) -> tuple[str, list[PromptMessage]]:
    scope = _scope_argument(actor, arguments)
    where = ("the notebook it belongs to" if scope is rules.EVERYWHERE
             else "Personal" if scope is None else f"notebook {scope}")
    text = (
        "We are ending this session. Save what should outlast it in Grove:\n"
        "1. List the decisions made, facts learned, preferences I stated and problems "
        "solved in this session.\n"
        "2. For each, call `recall` with its gist first: if Grove already has it, correct "
        "that note with `update_memory` (send its id as recall cites it, so a newer change "
        "is not overwritten) instead of saving a duplicate.\n"
        "3. Save each new one with `remember` — one idea per note, kind decision, fact, "
        f"preference or solution, in {where} — with capture \"explicit\" (I asked).\n"
        "4. For unfinished work, save a handoff (kind handoff with a taskId) saying where "
        "it stands and what comes next.\n"
        "Leave out secrets and passing chatter. Finish with the ids you saved or changed.")
    return "End of session: save what matters", [PromptMessage("user", text)]


PROMPTS = [
    Prompt("load_my_context", "Load my context",
           "Start the session from your Grove brief: vision, rules, handoffs, what "
           "changed.", _load_context, arguments=[
               NOTEBOOK_ARGUMENT,
               PromptArgument("focus", "What you are about to work on (adds related "
                                       "notes)."),
               PromptArgument("timeZone", "IANA time zone for dates, e.g. "
                                          "America/Los_Angeles (default UTC).")]),
    Prompt("save_handoff", "Save a handoff for this task",
           "Write where a task stands so another session can continue it.",
           _save_handoff, arguments=[
               PromptArgument("taskId", "The task (stable, e.g. a ticket or branch).",
                              required=True),
               NOTEBOOK_ARGUMENT]),
    Prompt("end_of_session", "End of session: save what matters",
           "Save this session's decisions, facts, preferences and fixes — without "
           "duplicates — and a handoff for unfinished work.",
           _end_of_session, arguments=[NOTEBOOK_ARGUMENT]),
]
