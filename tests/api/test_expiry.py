"""store's ttl / expires_at (issue 39): an expired memory leaves every recall path at once and the
worker's sweep deletes it from the file after the grace period; both engines."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from pg_cluster import BOTH_ENGINES

from cpersona.config import Settings
from cpersona.core.text import format_ts, utc_now
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.errors import Rejected
from cpersona.memory import Memory

pytestmark = BOTH_ENGINES


def _refs(memory: Memory, query: str) -> list[str]:
    return [str(r["ref"]) for r in memory.recall("a", query)["results"]]


def test_a_two_second_memory_is_gone_from_recall_then_from_the_file(settings: Settings) -> None:
    with Memory(
        replace(settings, expiry_grace=1.0), backend=NoEmbeddings(), start_background=False
    ) as memory:
        short = memory.store("a", "this week the standup is in room Osprey", ttl=2)
        kept = memory.store("a", "the standup is usually in room Kestrel")["ref"]
        assert short["expires_at"] > format_ts(utc_now())
        assert short["ref"] in _refs(memory, "standup room Osprey")
        listed = {i["ref"]: i for i in memory.list_memories("a")["items"]}
        assert listed[short["ref"]]["expires_at"] == short["expires_at"]
        assert memory.worker.sweep_expired() == 0  # not expired yet
        time.sleep(3)
        assert short["ref"] not in _refs(memory, "standup room Osprey")
        assert short["ref"] not in _refs(memory, "")  # the most-recent path too
        assert short["ref"] not in _refs(memory, "Osprey")
        assert kept in _refs(memory, "standup room")
        assert memory.worker.sweep_expired() == 1  # expired 1 s ago, grace 1 s
        assert memory.get_contents("a", [short["ref"]])["missing"] == [short["ref"]]
        assert memory.list_memories("a")["total"] == 1
    if settings.db_url is None:
        with sqlite3.connect(settings.db_path) as conn:
            assert (
                conn.execute("SELECT COUNT(*) FROM memories WHERE content LIKE '%Osprey%'").fetchone()[0] == 0
            )
            assert (
                conn.execute(
                    "SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH 'Osprey'"
                ).fetchone()[0]
                == 0
            )


def test_locked_expired_rows_stay_hidden_until_unlocked(settings: Settings) -> None:
    with Memory(
        replace(settings, expiry_grace=0.0), backend=NoEmbeddings(), start_background=False
    ) as memory:
        ref = memory.store("a", "a locked note that expires", ttl=1)["ref"]
        memory.lock_memory(ref)
        time.sleep(1.5)
        assert ref not in _refs(memory, "locked note")
        assert memory.worker.sweep_expired() == 0
        memory.unlock_memory(ref)
        assert memory.worker.sweep_expired() == 1


def test_expires_at_is_taken_as_a_time(memory: Memory) -> None:
    at = utc_now() + timedelta(days=7)
    stored = memory.store("a", "the on-call week", expires_at=at.isoformat())
    assert stored["expires_at"][:19] == format_ts(at)[:19]
    assert (
        memory.store("a", "in unix seconds", expires_at=at.timestamp())["expires_at"][:16]
        == format_ts(at)[:16]
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"ttl": 0},
        {"ttl": -5},
        {"ttl": 11 * 366 * 86400},
        {"ttl": "3600"},
        {"ttl": True},
        {"ttl": float("nan")},
        {"expires_at": "2001-01-01T00:00:00Z"},
        {"expires_at": "not a time"},
        {"ttl": 60, "expires_at": "2099-01-01T00:00:00Z"},
    ],
)
def test_bad_expiry_is_rejected_and_nothing_stored(memory: Memory, kwargs: dict[str, object]) -> None:
    with pytest.raises(Rejected):
        memory.store("a", "never stored", **kwargs)  # type: ignore[arg-type]
    assert memory.list_memories("a")["total"] == 0


@pytest.mark.slow
def test_the_running_worker_deletes_after_the_grace_period(settings: Settings) -> None:
    # No direct call: the background worker's own round (every few seconds) does the sweep.
    with Memory(replace(settings, expiry_grace=0.5), backend=NoEmbeddings()) as memory:
        memory.wait_until_ready(5)
        ref = memory.store("a", "a note for the next second", ttl=1)["ref"]
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not memory.get_contents("a", [ref])["missing"]:
            time.sleep(0.5)
        assert memory.get_contents("a", [ref])["missing"] == [ref]


def test_export_import_and_merge_carry_expiry_and_retirement(settings: Settings, tmp_path: Path) -> None:
    exports = tmp_path / "exports"
    at = format_ts(utc_now() + timedelta(days=3))
    with Memory(replace(settings, export_dir=exports), backend=NoEmbeddings(), start_background=False) as src:
        src.store("a", "the on-call week of Sam", expires_at=at)
        retired = src.store("a", "the old wiki address")["ref"]
        src.retire_memory(retired, "moved to the new wiki")
        src.store("a", "a plain memory")
        src.export_memories("a", "a.jsonl")
        merged = src.merge_memories("a", "b")
        assert merged["counts"]["memories"]["copied"] == 3
        listed = {i["content"]: i for i in src.list_memories("b")["items"]}
        assert listed["the on-call week of Sam"]["expires_at"] == at
        assert listed["the old wiki address"]["retire_reason"] == "moved to the new wiki"
        assert "expires_at" not in listed["a plain memory"] and "retired_at" not in listed["a plain memory"]
    lines = (exports / "a.jsonl").read_text()
    assert f'"expires_at":"{at}"' in lines and '"retire_reason":"moved to the new wiki"' in lines
    target = replace(settings, export_dir=exports, db_path=tmp_path / "other.db", db_url=None)
    with Memory(target, backend=NoEmbeddings(), start_background=False) as dst:
        result = dst.import_memories("a.jsonl")
        assert result["counts"]["lifecycle"] == {"read": 2, "set": 2}
        listed = {i["content"]: i for i in dst.list_memories("a")["items"]}
        assert listed["the on-call week of Sam"]["expires_at"] == at
        assert (
            listed["the old wiki address"]["retired_at"] and "retire_reason" in listed["the old wiki address"]
        )
        assert [r["content"] for r in dst.recall("a", "wiki address")["results"]] == []
        again = dst.import_memories("a.jsonl")  # what is there wins: nothing changes
        assert again["counts"]["lifecycle"] == {"read": 2, "set": 0}
