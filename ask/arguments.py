"""Ask's arguments, shared by `POST /v1/ask` and the `ask` MCP tool."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import Field

from ask import services
from grove.schemas import In


class AskIn(In):
    query: str = Field(max_length=services.QUERY_MAX_CHARS,
                       description="The question, in plain words.")
    notebook_id: uuid.UUID | None = Field(
        default=None, description="One notebook; null = Personal only; omit for all granted")
    include_personal: bool = True
    previous_questions: list[str] = Field(default_factory=list,
                                          max_length=services.PREVIOUS_MAX)
    mode: Literal["answer", "search"] = "answer"

    def service_kwargs(self) -> dict[str, Any]:
        place = self.notebook_id if "notebook_id" in self.model_fields_set \
            else services.EVERYWHERE
        return {"query": self.query, "notebook_id": place,
                "include_personal": self.include_personal,
                "previous_questions": self.previous_questions, "mode": self.mode}
