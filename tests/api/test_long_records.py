"""Long memories with the real MiniLM model: a fact deep in a long text is found by meaning through its
block vector, on both engines (docs/retrieval.md#long-records)."""

from __future__ import annotations

from pathlib import Path

import pytest
import tokenizers
from long_answer import FACT, LONG, PARAGRAPHS, QUESTION, SHORT
from pg_cluster import BOTH_ENGINES, raw_rows

from cpersona.config import Settings
from cpersona.embed.runtime.blocks import LEAD_MIN_CHARS, block_spans
from cpersona.memory import Memory

pytestmark = [pytest.mark.slow, BOTH_ENGINES]


def _settings(tmp: Path, name: str, models_dir: Path, db_url: str | None, index: str) -> Settings:
    return Settings(
        db_path=tmp / name / "memory.db",
        db_url=db_url,
        pg_vector_index=index,
        embedding_mode="onnx",
        models_dir=models_dir,
        embedding_model="all-minilm-l6-v2",
        export_dir=tmp / "exports",
        update_check=False,
        auto_fetch_model=False,
        recent_recall_penalty=1.0,
    )


def _best(mem: Memory, query: str = QUESTION) -> dict:
    return mem.recall("a", query, limit=3)["results"][-1]


def _block_rows_of(text: str) -> list[tuple[int, int, int]]:
    return block_spans(text, 256)


def _among_short(mem: Memory, text: str) -> dict:
    """Store ``text`` and the short memories beside it, once the model is ready; ``text``'s store answer."""
    assert mem.wait_until_ready(60)
    stored = mem.store("a", text)
    for short in SHORT:
        mem.store("a", short)
    return stored


def _block_rows(mem: Memory, memory_id: int) -> list[tuple]:
    return raw_rows(
        mem,
        "SELECT block_index, char_start, char_end FROM memory_blocks WHERE memory_id = ? ORDER BY 1",
        (memory_id,),
    )


def test_every_block_is_read_whole_by_the_real_tokenizer(minilm_models_dir: Path, engine: str) -> None:
    tokenizer = tokenizers.Tokenizer.from_file(str(minilm_models_dir / "all-minilm-l6-v2" / "tokenizer.json"))
    tokenizer.no_truncation()
    spans = [span for span in block_spans(LONG, 256) if span[0] >= 1]  # beyond the window (not the lead)
    assert len(tokenizer.encode(LONG).ids) > 256 and spans  # the text is longer than the window
    assert spans[0][1] > 0 and spans[-1][2] == len(LONG)  # blocks start past the first window, reach the end
    for (_, _, end), (_, start, _) in zip(spans, spans[1:], strict=False):
        assert start < end  # consecutive blocks overlap
    for _, start, end in spans:
        assert len(tokenizer.encode(LONG[start:end]).ids) <= 256
    assert block_spans(SHORT[0], 256) == []


def test_a_fact_deep_in_a_long_memory_is_found_by_meaning(
    tmp_path: Path, minilm_models_dir: Path, db_url: str | None, pg_vector_index: str
) -> None:
    with Memory(_settings(tmp_path, "db", minilm_models_dir, db_url, pg_vector_index)) as mem:
        stored = _among_short(mem, LONG)
        best = _best(mem)
        assert best["id"] == stored["id"]
        block = best["match_reason"]["block"]
        assert block["start"] <= FACT < block["end"] and block["index"] >= 1
        assert "Ingrid" in LONG[block["start"] : block["end"]]
        assert [b[0] for b in _block_rows(mem, stored["id"])] == [i for i, _, _ in block_spans(LONG, 256)]
        lead = (0, 0, LONG.index(".") + 1)  # the first sentence
        assert _block_rows(mem, stored["id"])[0] == lead

        # The same text without its blocks: the fact is past what the memory's own vector reads.
        with mem.storage.write() as s:
            s.memories.set_blocks(stored["id"], [], "all-minilm-l6-v2", 384)
        without = mem.recall("a", QUESTION, limit=3)["results"]
        row = next((r for r in without if r["id"] == stored["id"]), None)
        assert row is None or "block" not in row["match_reason"]
        assert row is None or row["match_reason"].get("cosine", 0) < best["match_reason"]["cosine"] - 0.1

        # update_memory rebuilds the blocks from the new text; the fact is gone with the old one.
        edited = LONG.replace(PARAGRAPHS[6], PARAGRAPHS[1] + " " + PARAGRAPHS[2])
        mem.update_memory(stored["id"], edited)
        rebuilt = _block_rows(mem, stored["id"])
        assert rebuilt == block_spans(edited, 256) and rebuilt != _block_rows_of(LONG)
        after = mem.recall("a", QUESTION, limit=3)["results"]
        assert all("block" not in r["match_reason"] or r["match_reason"]["cosine"] < 0.3 for r in after)

        mem.delete_memory(stored["ref"], agent_id="a")
        assert _block_rows(mem, stored["id"]) == []


def test_blocks_round_trip_through_export_and_import(
    tmp_path: Path, minilm_models_dir: Path, new_db_url, pg_vector_index: str
) -> None:
    with Memory(_settings(tmp_path, "src", minilm_models_dir, new_db_url(), pg_vector_index)) as src:
        assert src.wait_until_ready(60)
        stored = src.store("a", LONG)
        for text in SHORT:
            src.store("a", text)
        src.export_memories("a", "long.jsonl", include_embeddings=True)
        src.export_memories("a", "plain.jsonl")
        original = raw_rows(
            src, "SELECT block_index, char_start, char_end, embedding FROM memory_blocks ORDER BY 1"
        )
        found = _best(src)
    assert original and found["id"] == stored["id"]

    with Memory(_settings(tmp_path, "dst", minilm_models_dir, new_db_url(), pg_vector_index)) as dst:
        assert dst.wait_until_ready(60)
        result = dst.import_memories("long.jsonl")
        assert result["queued_for_embedding"] == 0  # vectors and blocks came with the file: nothing to embed
        copied = raw_rows(
            dst, "SELECT block_index, char_start, char_end, embedding FROM memory_blocks ORDER BY 1"
        )
        assert [r[:3] for r in copied] == [r[:3] for r in original]
        assert [str(r[3]) for r in copied] == [str(r[3]) for r in original]
        best = _best(dst)
        assert best["content"] == LONG and best["match_reason"]["block"] == found["match_reason"]["block"]

    # Without vectors the rows are queued; the back-fill computes the blocks as it computes the rows'.
    # (No background worker: on PostgreSQL it would lease the tasks this thread drains.)
    plain = _settings(tmp_path, "plain", minilm_models_dir, new_db_url(), pg_vector_index)
    with Memory(plain, start_background=False) as dst:
        assert dst.embeddings.try_load()
        assert dst.import_memories("plain.jsonl")["queued_for_embedding"] == 1 + len(SHORT)
        assert dst.drain_queue() == 1 + len(SHORT)
        assert dst.get_queue_status()["depth"] == 0
        assert [
            r[:3]
            for r in raw_rows(dst, "SELECT block_index, char_start, char_end FROM memory_blocks ORDER BY 1")
        ] == [r[:3] for r in original]
        assert _best(dst)["match_reason"]["block"] == found["match_reason"]["block"]


def test_long_memories_without_blocks_are_reported_and_back_filled(
    tmp_path: Path, minilm_models_dir: Path, db_url: str | None, pg_vector_index: str
) -> None:
    settings = _settings(tmp_path, "db", minilm_models_dir, db_url, pg_vector_index)
    with Memory(settings, start_background=False) as mem:
        assert mem.embeddings.try_load()
        stored = mem.store("a", LONG)
        mem.store("a", SHORT[0])
        expected = _block_rows(mem, stored["id"])
        raw_rows(mem, "DELETE FROM memory_blocks")  # as stored before blocks existed
        report = mem.check_health(checks=["blocks"])
        assert report["checks"]["blocks"]["missing"] == 1
        assert [f["refs"] for f in report["findings"] if f["check"] == "blocks"] == [[stored["ref"]]]
        assert (
            mem.check_health("b", checks=["blocks"])["checks"]["blocks"]["missing"] == 0
        )  # another agent's view
        fixed = mem.check_health(checks=["blocks"], fix=True)
        assert fixed["repairs"]["blocks"] == {"queued": 1, "fixed": 1, "remaining": 0}
        assert mem.drain_queue() == 1
        assert _block_rows(mem, stored["id"]) == expected
        assert mem.check_health(checks=["blocks"])["checks"]["blocks"]["missing"] == 0

        # The start-up sweep (here through re-embed, which runs it too) finds them as well.
        raw_rows(mem, "DELETE FROM memory_blocks")
        assert mem.reembed()["ok"] is True
        assert _block_rows(mem, stored["id"]) == expected


def test_memories_stored_before_lead_blocks_get_them_and_others_are_left_alone(
    tmp_path: Path, minilm_models_dir: Path, db_url: str | None, pg_vector_index: str
) -> None:
    settings = _settings(tmp_path, "db", minilm_models_dir, db_url, pg_vector_index)
    run_on = "word " * 60  # 300 characters, no sentence end: no lead, and it fits the window
    with Memory(settings, start_background=False) as mem:
        assert mem.embeddings.try_load()
        long = mem.store("a", LONG)
        passing = mem.store("a", IN_PASSING)
        plain = mem.store("a", run_on)
        expected = {i: _block_rows(mem, i) for i in (long["id"], passing["id"])}
        assert _block_rows(mem, plain["id"]) == []
        raw_rows(mem, "DELETE FROM memory_blocks WHERE block_index = 0")  # as stored before leads existed
        report = mem.check_health(checks=["blocks"])
        assert report["checks"]["blocks"]["missing"] == 2
        assert mem.reembed()["ok"] is True  # runs the start-up sweep
        assert {i: _block_rows(mem, i) for i in expected} == expected
        assert _block_rows(mem, plain["id"]) == []
        assert mem.check_health(checks=["blocks"])["checks"]["blocks"]["missing"] == 0


#: A fact said in passing before a long request about something else (docs/retrieval.md#long-records).
IN_PASSING = (
    "We adopted a grey kitten from the animal shelter and named her Juniper. Anyway, unrelated question: "
    "I need to prepare the quarterly tax estimate for my freelance design work. Can you walk me through "
    "which expenses I can deduct, how to estimate the payment from last year's income, what happens if I "
    "underpay, and which forms and deadlines apply, in a short checklist I can print out?"
)


def test_a_fact_said_before_a_long_request_is_found_by_its_lead_block(
    tmp_path: Path, minilm_models_dir: Path, db_url: str | None, pg_vector_index: str
) -> None:
    with Memory(_settings(tmp_path, "db", minilm_models_dir, db_url, pg_vector_index)) as mem:
        stored = _among_short(mem, IN_PASSING)
        assert _block_rows(mem, stored["id"]) == [(0, 0, IN_PASSING.index(".") + 1)]  # fits the window
        best = _best(mem, "What is the name of the cat we got from the shelter?")
        assert best["id"] == stored["id"]
        assert best["match_reason"]["block"] == {"index": 0, "start": 0, "end": IN_PASSING.index(".") + 1}
    lead = (0, 0, IN_PASSING.index(".") + 1)
    assert block_spans(IN_PASSING[: LEAD_MIN_CHARS - 1], 256) == []  # a short row has no lead of its own
    assert block_spans(IN_PASSING[:LEAD_MIN_CHARS], 256) == [lead]
