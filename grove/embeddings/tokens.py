"""Counting tokens offline, with the tokenizer Grove already ships.

A brief is budgeted in tokens (SPEC §10). Grove cannot know which model an agent runs,
and the exact tokenizers of hosted models are not all available offline; the local
embedding model's tokenizer is (`grove/embedding_model/tokenizer.json`, loaded with the
`tokenizers` package the embedder uses). It is all-MiniLM-L6-v2's WordPiece tokenizer —
the bert-base-uncased vocabulary of 30,522 pieces — without truncation or padding and
without the `[CLS]`/`[SEP]` markers. It is a measure, not the agent's own count: a
chat model's tokenizer splits text differently, and scripts this vocabulary has no
pieces for (CJK, emoji) count one token per character here, fewer than such models
spend — leave room in budgets for such text. Every brief names this tokenizer in its
meta.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

TOKENIZER_FILE = Path(__file__).resolve().parent.parent / "embedding_model" / "tokenizer.json"
TOKENIZER_NAME = "all-MiniLM-L6-v2 WordPiece (bert-base-uncased vocabulary)"


@functools.cache
def _tokenizer() -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(TOKENIZER_FILE))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def count_tokens(text: str) -> int:
    """How many tokens `text` is (0 for the empty text)."""
    if not text:
        return 0
    return len(_tokenizer().encode(text, add_special_tokens=False).ids)


def count_each(texts: Sequence[str]) -> list[int]:
    """`count_tokens` of each text, in one batch (the tokenizer runs them in parallel)."""
    if not texts:
        return []
    encoded = _tokenizer().encode_batch(list(texts), add_special_tokens=False)
    return [len(e.ids) for e in encoded]
