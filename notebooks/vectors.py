"""The note-level vector index of migration 0005 (`notebooks_noteembedding`), kept so
that migration still reads as it ran. Vectors are per passage now: `passages.vectors`."""

from __future__ import annotations


def hnsw_index_sql(dimension: int) -> str:
    return (
        f"CREATE INDEX IF NOT EXISTS note_embedding_hnsw_{dimension} "
        f"ON notebooks_noteembedding USING hnsw "
        f"((embedding::vector({dimension})) vector_cosine_ops) "
        f"WITH (m = 16, ef_construction = 64) "
        f"WHERE dimension = {dimension}"
    )
