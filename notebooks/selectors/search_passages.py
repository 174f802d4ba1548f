"""Which passage of a note a library search's snippet is drawn from (issue 37): the one
the query's words rank highest, so a long document shows where it matched."""

from __future__ import annotations

from django.db.models import F, FloatField, Func, OuterRef, Subquery, TextField, Value
from django.db.models.functions import Coalesce

from notebooks.models import SEARCH_CONFIG
from passages.models import Passage


def _ranked(query: str) -> Func:
    """ts_rank of a passage's lexical vector against the query as typed (web-search
    syntax, English stemming: what the passages' vectors are made with)."""
    typed = Func(Value(query), function="websearch_to_tsquery",
                 template=f"%(function)s('{SEARCH_CONFIG}'::regconfig, %(expressions)s)")
    return Func(F("search"), typed, function="ts_rank", output_field=FloatField())


def best_passage_text(query: str) -> Coalesce:
    """The text of the note's passage that `query` ranks highest (the first on a tie),
    as an expression over `notebooks_note` rows; the note's content when it has none."""
    best = (Passage.objects.filter(note_id=OuterRef("id"))
            .annotate(rank=_ranked(query)).order_by("-rank", "position").values("text")[:1])
    return Coalesce(Subquery(best, output_field=TextField()), F("content"))
