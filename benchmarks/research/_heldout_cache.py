"""Cached LoCoMo databases and query vectors for the held-out research (issue 19).

Each conversation is stored once through the product (``Memory.store``, MiniLM int8) into
``<cache>/<conversation>.db``; query vectors are embedded once with the same model and kept in
``<cache>/queries.npz``. A research config then costs one pass of the real pipeline per question.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from _locomo_data import Conversation  # benchmarks/ (the CLI puts it on sys.path)

from cpersona.config import Settings
from cpersona.memory import Memory
from cpersona.storage.values import VectorQuery

AGENT = "locomo"


def settings_for(db: Path, models_dir: Path, **overrides: Any) -> Settings:
    """The benchmark's settings on ``db``: MiniLM, recent-recall penalty off (each question stands alone)."""
    return Settings(
        db_path=db,
        embedding_mode="onnx",
        models_dir=models_dir,
        embedding_model="all-minilm-l6-v2",
        recent_recall_penalty=1.0,
        **overrides,
    )


def ensure_database(cache: Path, conv: Conversation, models_dir: Path) -> Path:
    """``<cache>/<name>.db`` holding every turn of ``conv`` (stored once, through ``Memory.store``)."""
    db = cache / f"{conv.name}.db"
    done = cache / f"{conv.name}.done"
    if done.exists():
        return db
    for stale in cache.glob(f"{conv.name}.db*"):
        stale.unlink()
    with Memory(settings_for(db, models_dir)) as mem:
        if not mem.wait_until_ready(300):
            raise SystemExit(f"model did not load: {mem.embedding_status()}")
        for dia_id, content, stamp in conv.turns():
            mem.store(AGENT, content, msg_id=dia_id, timestamp=stamp)
    done.write_text("ok\n")
    print(f"  cached {db}", file=sys.stderr)
    return db


class QueryVectors:
    """Query text → vector, embedded once by the product's model and kept on disk."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.vectors: dict[str, np.ndarray] = {}
        if path.exists():
            with np.load(path, allow_pickle=False) as data:
                texts = [str(t) for t in data["texts"]]
                self.vectors = dict(zip(texts, data["vectors"], strict=True))
        self.dirty = False

    def get(self, mem: Memory, text: str) -> np.ndarray | None:
        vector = self.vectors.get(text)
        if vector is None:
            out = mem.embeddings.embed_query(text)
            if out is None:
                return None
            vector = np.asarray(out, dtype=np.float32)
            self.vectors[text] = vector
            self.dirty = True
        return vector

    def save(self) -> None:
        if not self.dirty:
            return
        texts = list(self.vectors)
        np.savez(self.path, texts=np.array(texts), vectors=np.vstack([self.vectors[t] for t in texts]))
        self.dirty = False


@contextmanager
def cached_memory(db: Path, models_dir: Path, queries: QueryVectors, **overrides: Any) -> Iterator[Memory]:
    """A ``Memory`` on ``db`` whose query embedding reads ``queries`` first."""
    with Memory(settings_for(db, models_dir, **overrides)) as mem:
        if not mem.wait_until_ready(300):
            raise SystemExit(f"model did not load: {mem.embedding_status()}")
        embeddings = mem.embeddings

        def vector_query(text: str) -> VectorQuery | None:
            vector = queries.get(mem, text)
            if vector is None:
                return None
            return VectorQuery(vector, embeddings.model_id, embeddings.dimension)

        mem.recaller._vector_query = vector_query  # type: ignore[method-assign]
        try:
            yield mem
        finally:
            queries.save()
