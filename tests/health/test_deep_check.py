"""deep_check on real rows (SQLite and PostgreSQL): each semantic finding, near-duplicates with the real
MiniLM model, report-only."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from health_damage import connect, location
from pg_cluster import BOTH_ENGINES, PG_VECTOR_INDEX

from cpersona.config import Settings
from cpersona.health.deep_checks import SHORT_CONTENT_CHARS, deep_check_names
from cpersona.memory import Memory
from cpersona.services.maintenance import UnknownCheck


@BOTH_ENGINES
def test_semantic_findings_are_reported_and_nothing_changes(memory: Memory) -> None:
    memory.store("d", "ok")  # short, anonymous
    named = memory.store(
        "d", "the deploy script lives in tools/deploy.sh", source={"type": "user", "id": "u1", "name": "Ann"}
    )
    memory.update_profile("d", "Ann runs the deploys")
    orphan = memory.archive_episode(
        "d",
        "a session about something",
        history=[
            {"role": "user", "content": "x", "timestamp": "2020-01-01T00:00:00Z"},
            {"role": "user", "content": "y", "timestamp": "2020-01-02T00:00:00Z"},
        ],
    )
    with connect(location(memory)) as raw:
        raw.execute("UPDATE profiles SET updated_at = '2020-01-01T00:00:00.000000Z' WHERE agent_id = 'd'")
        raw.executemany(
            "INSERT INTO memories(agent_id, content, timestamp, created_at) VALUES ('d', ?, "
            "'2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z')",
            [(f"later memory number {i} with enough text",) for i in range(20)],
        )
    before = memory.list_memories("d", limit=100)["items"]
    result = memory.deep_check("d", fix=True)
    assert result["ok"] is True and result["checks_run"] == deep_check_names() and result["fixed"] == 0
    by = {f["check"]: f for f in result["findings"]}
    assert by["short_content"]["count"] == 1 and SHORT_CONTENT_CHARS > 2
    assert f"mem:{named['id']}" not in by["anonymous_sources"]["refs"]
    assert by["anonymous_sources"]["count"] == 21
    assert by["stale_profile"]["severity"] == "warn" and result["status"] == "degraded"
    assert by["orphaned_episodes"]["refs"] == [orphan["ref"]]
    assert memory.list_memories("d", limit=100)["items"] == before
    # Another agent's rows are never part of the pass.
    assert {f["check"] for f in memory.deep_check("nobody")["findings"]} == {
        "near_duplicates"
    }  # skipped: no model


def test_unknown_deep_check_is_refused(memory: Memory) -> None:
    with pytest.raises(UnknownCheck) as refused:
        memory.deep_check("d", checks=["near_duplicates", "nope"])
    assert refused.value.details() == {"valid_checks": deep_check_names()}


@pytest.mark.slow
@BOTH_ENGINES
def test_near_duplicates_by_embedding_with_minilm(
    tmp_path: Path, minilm_models_dir: Path, new_db_url: Callable[[], str | None]
) -> None:
    settings = Settings(
        db_path=tmp_path / "memory.db",
        db_url=new_db_url(),
        pg_vector_index=PG_VECTOR_INDEX,
        embedding_mode="onnx",
        models_dir=minilm_models_dir,
        embedding_model="all-minilm-l6-v2",
        auto_fetch_model=False,
        update_check=False,
    )
    with Memory(settings) as mem:
        assert mem.wait_until_ready(120)
        a = mem.store("n", "The staging database moved to port 5433.")
        b = mem.store("n", "The staging database moved to port 5433!")
        mem.store("n", "Lunch is at noon on Fridays in the big room.")
        mem.store("other", "The staging database moved to port 5433.")
        result = mem.deep_check("n", checks=["near_duplicates"])
        pairs = result["checks"]["near_duplicates"]["pairs"]
        assert [sorted(p["refs"]) for p in pairs] == [sorted([a["ref"], b["ref"]])]
        assert pairs[0]["cosine"] >= 0.95
        assert result["checks"]["near_duplicates"]["compared"] == 3
