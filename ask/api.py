"""Ask over REST: `POST /v1/ask` (stateless; nothing is stored)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from ask import services
from ask.arguments import AskIn
from grove.api import ERRORS, ApiRouter, Ok, actor_of, ok

router = ApiRouter(tags=["ask"])


@router.post("/ask", response={200: Ok[services.AskOut], **ERRORS},
             summary="Ask: an answer from your notes, each block citing the exact note "
                     "revisions it used (or the sources alone when generation is off)")
def ask(request: HttpRequest, payload: AskIn) -> Any:
    return ok(services.ask(actor=actor_of(request), **payload.service_kwargs()))
