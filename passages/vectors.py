"""The vector index: one partial HNSW index per embedding dimension in use, over
`passages_passagevector` (cosine)."""

from __future__ import annotations

from django.db import connections

HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64


def index_name(dimension: int) -> str:
    return f"passage_vector_hnsw_{int(dimension)}"


def hnsw_index_sql(dimension: int) -> str:
    dimension = int(dimension)
    return (
        f"CREATE INDEX IF NOT EXISTS {index_name(dimension)} "
        f"ON passages_passagevector USING hnsw "
        f"((embedding::vector({dimension})) vector_cosine_ops) "
        f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) "
        f"WHERE dimension = {dimension}"
    )


def vector_index_exists(dimension: int, *, using: str = "default") -> bool:
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", [index_name(dimension)])
        return cursor.fetchone() is not None


def ensure_vector_index(dimension: int, *, using: str = "owner") -> None:
    """Create the HNSW index for a dimension if missing (needs the owner role); nothing
    while the table is not there (migrated back before passages)."""
    if vector_index_exists(dimension, using=using):
        return
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT to_regclass('passages_passagevector') IS NOT NULL")
        if cursor.fetchone()[0]:
            cursor.execute(hnsw_index_sql(int(dimension)))
