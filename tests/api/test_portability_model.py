"""Export/import with the real MiniLM model: vectors travel, or are back-filled when they do not."""

from __future__ import annotations

import base64
import json
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


def _ten_d_line(content: str) -> str:
    vector = (np.ones(10) / np.sqrt(10)).astype("<f4")
    return json.dumps(
        {
            "type": "memory",
            "agent_id": "mallory",
            "content": content,
            "embedding": base64.b64encode(vector.tobytes()).decode(),
            "embedding_model": "all-minilm-l6-v2",
            "embedding_dim": 10,
        }
    )


def test_a_10d_vector_claiming_minilm_leaves_vector_search_working_after_a_restart(
    tmp_path: Path, minilm_models_dir: Path
) -> None:
    settings = _settings(tmp_path, "db", minilm_models_dir)
    with Memory(settings) as mem:
        assert mem.wait_until_ready(60)
        for text in TEXTS:
            assert mem.store("a", text)["embedded"] is True
        (tmp_path / "exports").mkdir(exist_ok=True)
        header = {"type": "header", "format": "cpersona-export", "version": 1}
        (tmp_path / "exports" / "ten.jsonl").write_text(
            json.dumps(header) + "\n" + _ten_d_line("ten dimensions, internally consistent") + "\n"
        )
        result = mem.import_memories("ten.jsonl")
        assert result["error_count"] == 0 and result["vectors_dropped"] == 1
        assert result["queued_for_embedding"] == 1
    with Memory(settings) as mem:
        assert mem.wait_until_ready(60)  # model_ready: no dimension fault
        assert mem.embedding_status()["state"] == "healthy"
        best = mem.recall("a", "A kitten is resting on a rug")["results"][-1]
        assert best["content"] == TEXTS[0] and best["match_reason"]["cosine"] > 0.5
        mem.drain_queue()
        assert mem.get_queue_status()["depth"] == 0
    dims = sqlite3.connect(settings.db_path).execute("SELECT DISTINCT embedding_dim FROM memories").fetchall()
    assert dims == [(384,)]


def test_stray_vectors_already_stored_never_fault_the_model_and_are_repaired(
    tmp_path: Path, minilm_models_dir: Path
) -> None:
    """A database an older version filled with a few contradicting vectors (before imports checked)."""
    settings = _settings(tmp_path, "db", minilm_models_dir)
    with Memory(settings) as mem:
        assert mem.wait_until_ready(60)
        for text in TEXTS:
            mem.store("a", text)
        stray = mem.store("mallory", "ten dimensions stored by an older version")["id"]
    conn = sqlite3.connect(settings.db_path)
    with conn:
        conn.execute(
            "UPDATE memories SET embedding = ?, embedding_dim = 10 WHERE id = ?",
            ((np.ones(10) / np.sqrt(10)).astype("<f4").tobytes(), stray),
        )
    conn.close()
    with Memory(settings, start_background=False) as mem:
        assert mem.embeddings.try_load()  # a minority of odd rows is not a fault
        report = mem.check_health(checks=["dimensions"])
        assert report["status"] == "degraded"
        assert any("not 384-d" in f["message"] and f.get("count") == 1 for f in report["findings"]), report
        best = mem.recall("a", "A kitten is resting on a rug")["results"][-1]
        assert best["content"] == TEXTS[0] and best["match_reason"]["cosine"] > 0.5
        fixed = mem.check_health(fix=True, checks=["vectors", "dimensions"])
        assert fixed["ok"]
        mem.drain_queue()
        assert mem.check_health(checks=["dimensions"])["findings"] == []
