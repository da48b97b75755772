"""Export/import with the real MiniLM model: vectors travel, or are back-filled when they do not."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from cpersona.config import Settings
from cpersona.memory import Memory
from cpersona.storage.vectors import from_blob

pytestmark = pytest.mark.slow

TEXTS = [
    "The cat sits on the mat",
    "Quarterly revenue grew by eight percent",
    "The train to Osaka leaves at noon",
]


def _settings(tmp: Path, name: str, models_dir: Path) -> Settings:
    return Settings(
        db_path=tmp / name / "memory.db",
        embedding_mode="onnx",
        models_dir=models_dir,
        embedding_model="all-minilm-l6-v2",
        export_dir=tmp / "exports",
        update_check=False,
        auto_fetch_model=False,
    )


def vectors(db: Path) -> dict[str, tuple[np.ndarray, str]]:
    conn = sqlite3.connect(db)
    try:
        return {
            c: (from_blob(b), m)
            for c, b, m in conn.execute(
                "SELECT content, embedding, embedding_model FROM memories WHERE embedding IS NOT NULL"
            )
        }
    finally:
        conn.close()


def test_vectors_round_trip_and_missing_ones_are_back_filled(tmp_path: Path, minilm_models_dir: Path) -> None:
    with Memory(_settings(tmp_path, "src", minilm_models_dir)) as src:
        assert src.wait_until_ready(60)
        for text in TEXTS:
            assert src.store("a", text)["embedded"] is True
        src.export_memories("a", "with.jsonl", include_embeddings=True)
        src.export_memories("a", "without.jsonl")
    original = vectors(tmp_path / "src" / "memory.db")
    assert len(original) == 3

    with Memory(_settings(tmp_path, "with", minilm_models_dir)) as dst:
        assert dst.wait_until_ready(60)
        result = dst.import_memories("with.jsonl")
        assert (
            result["queued_for_embedding"] == 0 and result["header"]["embedding_model"] == "all-minilm-l6-v2"
        )
        assert dst.get_queue_status()["depth"] == 0
        best = dst.recall("a", "A kitten is resting on a rug")["results"][-1]
        assert best["content"] == TEXTS[0] and best["match_reason"]["cosine"] > 0.5
    copied = vectors(tmp_path / "with" / "memory.db")
    assert set(copied) == set(original)
    for text, (vec, model) in copied.items():
        assert model == original[text][1] and np.array_equal(vec, original[text][0])

    with Memory(_settings(tmp_path, "without", minilm_models_dir)) as dst:
        assert dst.wait_until_ready(60)
        result = dst.import_memories("without.jsonl")
        assert result["queued_for_embedding"] == 3
        dst.drain_queue()
        assert dst.get_queue_status()["depth"] == 0
    filled = vectors(tmp_path / "without" / "memory.db")
    for text, (vec, _) in filled.items():
        assert float(np.dot(vec, original[text][0])) > 0.999
