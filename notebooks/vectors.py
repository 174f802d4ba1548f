"""Vector index management: one partial HNSW index per embedding dimension in use."""

from __future__ import annotations

from django.db import connections

HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64


def hnsw_index_sql(dimension: int) -> str:
    return (
        f"CREATE INDEX IF NOT EXISTS note_embedding_hnsw_{dimension} "
        f"ON notebooks_noteembedding USING hnsw "
        f"((embedding::vector({dimension})) vector_cosine_ops) "
        f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) "
        f"WHERE dimension = {dimension}"
    )


def vector_index_exists(dimension: int, *, using: str = "default") -> bool:
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s",
                       [f"note_embedding_hnsw_{int(dimension)}"])
        return cursor.fetchone() is not None


def ensure_vector_index(dimension: int, *, using: str = "owner") -> None:
    """Create the HNSW index for a dimension if missing (needs the owner role)."""
    if vector_index_exists(dimension, using=using):
        return
    with connections[using].cursor() as cursor:
        cursor.execute(hnsw_index_sql(int(dimension)))
