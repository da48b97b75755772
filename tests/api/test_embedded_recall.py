"""Memory with the real MiniLM ONNX model: vector recall, back-fill, model change."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from model_fixtures import tiny_jina_manifest
from pg_cluster import ENGINES_AND_EXACT, raw_rows

from cpersona.config import Settings
from cpersona.embed.runtime.onnx_backend import OnnxBackend
from cpersona.memory import Memory
from cpersona.storage.vectors import from_blob

pytestmark = [pytest.mark.slow, ENGINES_AND_EXACT]


def _settings(tmp_path: Path, models_dir: Path, db_url: str | None, index: str, **extra: object) -> Settings:
    return Settings(
        db_path=tmp_path / "memory.db",
        db_url=db_url,
        pg_vector_index=index,
        embedding_mode="onnx",
        models_dir=models_dir,
        embedding_model="all-minilm-l6-v2",
        recent_recall_penalty=1.0,
        **extra,
    )


def test_paraphrase_found_through_the_vector_channel(
    tmp_path: Path, minilm_models_dir: Path, db_url: str | None, pg_vector_index: str
) -> None:
    with Memory(_settings(tmp_path, minilm_models_dir, db_url, pg_vector_index)) as mem:
        assert mem.wait_until_ready(60)
        target = mem.store("a", "The cat sits on the mat")
        mem.store("a", "Quarterly revenue grew by eight percent")
        mem.store("a", "The train to Osaka leaves at noon")
        assert target["embedded"] is True
        out = mem.recall("a", "A kitten is resting on a rug")
        best = out["results"][-1]
        assert best["id"] == target["id"]
        assert best["match_reason"]["cosine"] > 0.5
        assert out["search"]["vector"] is True
        assert "advisory" not in out
        norm = raw_rows(mem, "SELECT embedding FROM memories WHERE id = ?", (target["id"],))[0][0]
        vector = (
            from_blob(norm) if isinstance(norm, bytes) else np.array(str(norm).strip("[]").split(","), float)
        )
        assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def test_stores_before_the_model_is_ready_are_back_filled(
    tmp_path: Path, minilm_models_dir: Path, db_url: str | None, pg_vector_index: str
) -> None:
    mem = Memory(_settings(tmp_path, minilm_models_dir, db_url, pg_vector_index), start_background=False)
    try:
        early = mem.store("a", "The cat sits on the mat")
        assert early["embedded"] is False
        assert mem.get_queue_status()["depth"] == 1
        loading = mem.recall("a", "kitten on a rug")
        assert loading["advisory"]["state"] == "unknown" and loading["advisory"]["full"] is True
        assert mem.embeddings.try_load()
        assert mem.drain_queue() == 1
        assert mem.get_queue_status()["depth"] == 0
        row = mem.list_memories("a")["items"][0]
        assert row["embedded"] is True and row["embedding_model"] == "all-minilm-l6-v2"
        ready = mem.recall("a", "A kitten is resting on a rug")
        assert ready["results"][-1]["id"] == early["id"] and "advisory" not in ready
    finally:
        mem.close()


def test_back_fill_resumes_after_a_crash(
    tmp_path: Path, minilm_models_dir: Path, db_url: str | None, pg_vector_index: str
) -> None:
    first = Memory(_settings(tmp_path, minilm_models_dir, db_url, pg_vector_index), start_background=False)
    for i in range(40):
        first.store("a", f"note number {i} about gardening")
    assert first.get_queue_status()["depth"] == 40
    first.storage.close()  # no drain, no orderly stop: what a killed process leaves behind

    with Memory(_settings(tmp_path, minilm_models_dir, db_url, pg_vector_index)) as second:
        assert second.wait_until_ready(60)
        second.worker.wake()
        for _ in range(400):
            if second.get_queue_status()["depth"] == 0:
                break
            time.sleep(0.05)
        assert second.get_queue_status()["depth"] == 0
        assert raw_rows(second, "SELECT COUNT(*) FROM memories WHERE embedding IS NULL")[0][0] == 0


def test_model_change_re_embeds_through_the_queue(
    tmp_path: Path,
    minilm_models_dir: Path,
    tiny_jina_models_dir: Path,
    db_url: str | None,
    pg_vector_index: str,
) -> None:
    with Memory(_settings(tmp_path, minilm_models_dir, db_url, pg_vector_index)) as mem:
        assert mem.wait_until_ready(60)
        for i in range(10):
            mem.store("a", f"the cat sits on the mat {i}")
    switched = Settings(
        db_path=tmp_path / "memory.db",
        db_url=db_url,
        pg_vector_index=pg_vector_index,
        embedding_mode="onnx",
        models_dir=tiny_jina_models_dir,
        embedding_model="jina-v5-nano",
    )
    # The tiny graph cannot pass jina's semantic self-test (random weights): use the manifest without it.
    backend = OnnxBackend.from_settings(tiny_jina_manifest(), switched)
    mem = Memory(switched, backend=backend, start_background=False)
    try:
        assert mem.embeddings.try_load()
        status = mem.get_queue_status()
        assert status["depth"] == 10 and status["by_kind"] == {"embed": 10}
        assert mem.drain_queue() == 10
        models = {r[0] for r in raw_rows(mem, "SELECT DISTINCT embedding_model FROM memories")}
        dims = {r[0] for r in raw_rows(mem, "SELECT DISTINCT embedding_dim FROM memories")}
        assert models == {"jina-v5-nano"} and dims == {768}
        assert mem.recall("a", "the cat")["search"]["vector"] is True
    finally:
        mem.close()


def test_update_memory_re_embeds(
    tmp_path: Path, minilm_models_dir: Path, db_url: str | None, pg_vector_index: str
) -> None:
    with Memory(_settings(tmp_path, minilm_models_dir, db_url, pg_vector_index)) as mem:
        assert mem.wait_until_ready(60)
        stored = mem.store("a", "The cat sits on the mat")
        mem.store("a", "Stock markets fell sharply today")
        mem.update_memory(stored["id"], "Interest rates rose again this quarter")
        best = mem.recall("a", "monetary policy and borrowing costs")["results"][-1]
        assert best["id"] == stored["id"]


def test_stats_report_rows_outside_the_vector_window(
    tmp_path: Path, minilm_models_dir: Path, db_url: str | None, pg_vector_index: str
) -> None:
    with Memory(_settings(tmp_path, minilm_models_dir, db_url, pg_vector_index, max_memories=3)) as mem:
        assert mem.wait_until_ready(60)
        for i in range(5):
            mem.store("a", f"the cat sits on mat number {i}")
        mem.store("b", "a single row for bob")
        window = mem.stats()["vector_window"]
        assert window == {"size": 3, "rows_outside": {"a": {"memories": 2}}}
        # The oldest rows are outside the window: vector search cannot see them, keywords still can.
        vector_only = mem.recall("a", "kitten on a rug", limit=10)["results"]
        assert {r["content"] for r in vector_only if r["match_reason"].get("cosine") is not None} == {
            f"the cat sits on mat number {i}" for i in (2, 3, 4)
        }
