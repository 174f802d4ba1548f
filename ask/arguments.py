"""Ask's arguments, shared by `POST /v1/ask` and the `ask` MCP tool."""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from pydantic import Field
from pydantic.json_schema import JsonDict

from ask import conversations, services
from grove.kernel.schemas import In
from grove.kernel.validation import NONBLANK_TEXT, STORABLE_TEXT
from notebooks.schemas.arguments import CURSOR_MAX_CHARS, PLACE_FILTER, Place, place_of

_QUESTION: JsonDict = {"pattern": NONBLANK_TEXT}


class AskIn(In):
    query: str = Field(max_length=services.QUERY_MAX_CHARS,
                       description="The question, in plain words.", json_schema_extra=_QUESTION)
    notebook_id: Place | None = Field(default=None, description=PLACE_FILTER +
                                      " (REST: null = Personal).")
    include_personal: bool = Field(default=True, description="With everything granted: "
                                   "Personal notes too, when granted.")
    previous_questions: list[Annotated[str, Field(max_length=services.QUERY_MAX_CHARS,
                                                  json_schema_extra=_QUESTION)]] = Field(
        default_factory=list, max_length=services.PREVIOUS_MAX,
        description="Earlier questions, oldest first, for a follow-up like \"and in "
        "May?\".")
    mode: Literal["answer", "search"] = Field(default="answer", description="search: the "
                                              "sources only, no answer.")

    def service_kwargs(self) -> dict[str, Any]:
        place = place_of(self.notebook_id) if "notebook_id" in self.model_fields_set \
            else services.EVERYWHERE
        return {"query": self.query, "notebook_id": place,
                "include_personal": self.include_personal,
                "previous_questions": self.previous_questions, "mode": self.mode}


class ContextIn(In):
    notes: list[uuid.UUID] = Field(default_factory=list,
                                   max_length=conversations.CONTEXT_NOTES_MAX,
                                   json_schema_extra={"uniqueItems": True},
                                   description="Up to 12 note ids, each once")
    notebooks: list[uuid.UUID] = Field(default_factory=list,
                                       max_length=conversations.CONTEXT_NOTEBOOKS_MAX,
                                       json_schema_extra={"uniqueItems": True},
                                       description="Up to 6 notebook ids, each once")
    only: bool = Field(default=False, description="Use nothing outside the selection")


class ConversationCreateIn(In):
    id: uuid.UUID = Field(description="The conversation's id, chosen by the client (a UUID): "
                                      "retrying the same create is harmless")
    notebook_id: uuid.UUID | None = Field(
        default=None, description="One notebook; null = Personal only; omit for all granted")
    include_personal: bool = True
    title: str | None = Field(default=None, json_schema_extra={"pattern": STORABLE_TEXT})

    def service_kwargs(self) -> dict[str, Any]:
        place = self.notebook_id if "notebook_id" in self.model_fields_set \
            else services.EVERYWHERE
        return {"conversation_id": self.id, "notebook_id": place,
                "include_personal": self.include_personal, "title": self.title}


class TurnIn(In):
    id: uuid.UUID = Field(description="The turn's id, chosen by the client (a UUID): a retry "
                                      "with the same id and body replays")
    query: str = Field(description="The question (at most 6,000 characters)",
                       max_length=services.QUERY_MAX_CHARS, json_schema_extra=_QUESTION)
    format: Literal["plain", "markdown"] = "plain"
    expected_version: int = Field(ge=0, description="The conversation version you last saw")
    context: ContextIn | None = Field(
        default=None, description="Strict source selection: notes and notebooks to answer "
                                  "from; with only=true nothing else is used")

    def service_kwargs(self) -> dict[str, Any]:
        context = None
        if self.context is not None:
            context = {"notes": self.context.notes, "notebooks": self.context.notebooks,
                       "only": self.context.only}
        return {"turn_id": self.id, "query": self.query, "format": self.format,
                "expected_version": self.expected_version, "context": context}


class HistorySearchIn(In):
    query: str | None = Field(default=None, max_length=conversations.SEARCH_MAX_CHARS,
                              json_schema_extra={"pattern": STORABLE_TEXT},
                              description="Literal, case-insensitive text to find in titles "
                                          "and questions")
    cursor: str | None = Field(default=None, min_length=1, max_length=CURSOR_MAX_CHARS)
