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
from grove.kernel.actor import Actor
from grove.kernel.errors import Invalid, NotFound
from notebooks import rules, selectors, services
from notebooks.schemas.arguments import place_of
from notebooks.schemas.briefs import (
    ActivityArgs,
    ActivityPage,
    BriefArgs,
    ToolBrief,
    ToolTruth,
    UpdateVisionArgs,
    VisionSaved,
    WhoamiArgs,
    WhoamiOut,
)
from notebooks.schemas.notes import NoteRead, known_false_words
from notebooks.schemas.truth import TruthArgs
from notebooks.selectors.resources import (
    NotebookResource,
    NoteResource,
    live_handoff,
    note_resource,
    notebook_resource,
    prompt_place,
    resource_page,
)

# -- tools -------------------------------------------------------------------------------------


def _brief(actor: Actor, args: BriefArgs) -> ToolBrief:
    return ToolBrief.of(selectors.brief_get(actor=actor, **args.service_kwargs()))


def _whoami(actor: Actor, args: WhoamiArgs) -> WhoamiOut:
    return selectors.whoami(actor=actor)


def _activity(actor: Actor, args: ActivityArgs) -> ActivityPage:
    return selectors.activity_list(actor=actor, **args.service_kwargs())


def _truth(actor: Actor, args: TruthArgs) -> ToolTruth:
    return selectors.truth_for_agent(actor=actor, notebook_id=args.notebook_id,
                                     full=args.full)


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
         "Your first read: the vision, who you are and may do, ground truth, live "
         "handoffs, recent changes, the preferences, facts and decisions that apply and "
         "notes related to focus — within budgetTokens; past it notes become index lines "
         "(get_note reads them).",
         BriefArgs, ToolBrief, _brief, read_only=True),
    Tool("whoami", "Who am I",
         "This connection: its name, read/write, whether it sees Personal notes, its "
         "notebooks, and whether automatic capture is paused.",
         WhoamiArgs, WhoamiOut, _whoami, read_only=True),
    Tool("recent_activity", "Recent activity",
         "Changes (revisions) since a time, newest first: note, version, what changed "
         "and which connection made it.",
         ActivityArgs, ActivityPage, _activity, read_only=True),
    Tool("truth", "Ground truth",
         "The notes a notebook (or the account) declares authoritative, and its claims "
         "known to be false. restrict: only declared notes answer for facts, decisions "
         "and solutions there. Changes to declared notes wait for the owner.",
         TruthArgs, ToolTruth, _truth, read_only=True),
    Tool("update_vision", "Update a vision",
         "Replace a notebook's vision (what its work is for; it heads every brief), or "
         "the account's, as a new version.",
         UpdateVisionArgs, VisionSaved, _update_vision, read_only=False),
]

# -- resources ---------------------------------------------------------------------------------

_UUID = r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}"
_NOTE_URI = re.compile(rf"note://({_UUID})(?:@([1-9][0-9]{{0,8}})(?:#([1-9][0-9]{{0,5}}))?)?",
                       re.IGNORECASE)
_NOTEBOOK_URI = re.compile(rf"notebook://({_UUID})", re.IGNORECASE)
_BRIEF_URI = re.compile(rf"brief://({_UUID}|personal|all)", re.IGNORECASE)

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


def _note_text(found: NoteResource) -> str:
    """A note (with what declared ground truth says of it) or one revision, as text."""
    note = found.read or found.revision
    assert note is not None
    place = (found.paths.get(note.notebook_id, "a notebook") if note.notebook_id
             else "Personal")
    when = note.updated_at if isinstance(note, NoteRead) else note.created_at
    head = f"{note.versioned_id} — {note.kind}, {place}, {when:%Y-%m-%d}"
    if note.passage is not None:
        trail = " › ".join(note.passage.headings)
        head = (f"{note.passage.id} — passage {note.passage.position} of {note.passage.of}"
                + (f" ({trail})" if trail else "") + f" of a {note.kind}, {place}, "
                f"{when:%Y-%m-%d}")
    if note.task_id:
        head += f", task {note.task_id}"
    if found.read is not None and found.read.authority:
        head += ", declared ground truth"
    text = f"{head}\n\n{note.content}\n"
    if note.known_false:
        text += f"\n{known_false_words(note.known_false)}\n"
    if found.read is not None:
        text += _links_text(found.read)
    return text


def _links_text(read: NoteRead) -> str:
    """The note's links both ways, as `links` and `backlinks` say them (issue 38)."""
    text = ""
    if read.links:
        text += "\nLinks to:\n" + "".join(
            f"- {link.target}{'#' + link.heading if link.heading else ''} → "
            + (f"note:{link.note_id} ({link.title})\n" if link.note_id
               else "no note (unresolved)\n")
            for link in read.links)
    if read.backlinks:
        text += "\nLinked from:\n" + "".join(
            f"- note:{link.note_id} ({link.title})" + (f": {link.context}" if link.context else "")
            + "\n" for link in read.backlinks)
    return text


def _notebook_text(found: NotebookResource) -> str:
    notebook, shown, total = found.notebook, found.notes, found.total
    lines = [f"# {notebook.name} (notebook:{notebook.id}): {total} live notes, newest first"]
    lines += [f"- {n.versioned_id} {n.kind}, {n.updated_at:%Y-%m-%d}: "
              f"{note_title(n.content, 100, path=n.source_path)}" for n in shown]
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
        version = int(match.group(2)) if match.group(2) else None
        passage = int(match.group(3)) if match.group(3) else None
        text = _note_text(note_resource(actor=actor, note_id=match.group(1), version=version,
                                        passage=passage))
    elif match := _NOTEBOOK_URI.fullmatch(uri):
        text = _notebook_text(notebook_resource(actor=actor, notebook_id=match.group(1)))
    elif match := _BRIEF_URI.fullmatch(uri):
        text = _read_brief(actor, match.group(1))
    else:
        raise NotFound("No such resource.", code="resource_not_found")
    return [ResourceContent(uri=uri, text=text)]


def list_resources(actor: Actor, cursor: str | None) -> tuple[list[Resource], str | None]:
    """The resources this caller may read, a page at a time: the briefs (everything,
    Personal when granted, each live notebook) and each live notebook's note list, then
    every live note, newest first (`resource_page`)."""
    page = resource_page(actor=actor, cursor=cursor)
    found: list[Resource] = []
    if page.places is not None:
        found.append(Resource("brief://all", "brief-all", "Brief: everything"))
        if page.personal:
            found.append(Resource("brief://personal", "brief-personal", "Brief: Personal"))
        for nb_id, path in page.places:
            found += [Resource(f"brief://{nb_id}", f"brief-{nb_id}", f"Brief: {path}"),
                      Resource(f"notebook://{nb_id}", f"notebook-{nb_id}",
                               f"Notebook: {path}")]
    found += [Resource(f"note://{n.id}", f"note-{n.id}",
                       note_title(n.content, 80, path=n.source_path) or n.kind)
              for n in page.notes]
    return found, page.next_cursor


RESOURCES = ResourceProvider(schemes=("note", "notebook", "brief"), templates=TEMPLATES,
                             list_page=list_resources, read=read_resource)

# -- prompts -----------------------------------------------------------------------------------

NOTEBOOK_ARGUMENT = PromptArgument(
    "notebookId", "A notebook id (`<uuid>` or `notebook:<uuid>`), or \"personal\"; "
    "omitted: everything this connection may read.")


def _scope_argument(actor: Actor, arguments: dict[str, str]) -> Any:
    return prompt_place(actor=actor, value=arguments.get("notebookId") or "")


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
    current = live_handoff(actor=actor, task_id=task, scope=scope)
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
