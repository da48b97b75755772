"""check_health knows the word index: missing triggers recreated, lost or stale entries found and rebuilt."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.memory import Memory


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    settings = Settings(
        db_path=tmp_path / "memory.db",
        models_dir=tmp_path / "models",
        embedding_mode="none",
        update_check=False,
        auto_fetch_model=False,
    )
    with Memory(settings, backend=NoEmbeddings()) as memory:
        memory.wait_until_ready(5)
        yield memory


def _messages(result: dict[str, object], check: str) -> str:
    findings = result["findings"]
    assert isinstance(findings, list)
    return " ".join(f["message"] for f in findings if f["check"] == check and f["severity"] != "info")


def test_word_index_damage_is_found_and_fixed(mem: Memory) -> None:
    kept = mem.store("a", "the athlete runs every morning")["id"]
    stale = mem.store("a", "a row whose text changes behind the index")["id"]
    with closing(sqlite3.connect(str(mem.storage.path), isolation_level=None)) as conn:
        conn.execute(
            "INSERT INTO memories_words(memories_words, rowid, content) VALUES ('delete', ?, ?)",
            (kept, "the athlete runs every morning"),
        )
        conn.execute("DROP TRIGGER memories_words_insert")
        conn.execute("DROP TRIGGER memories_words_update")
        unindexed = int(
            conn.execute(
                "INSERT INTO memories(agent_id, content, timestamp, created_at) VALUES ('a', 'swims daily', 't', 't')"
            ).lastrowid
        )
        conn.execute(
            "UPDATE memories SET content = 'now a much longer text with many more words in it' WHERE id = ?",
            (stale,),
        )

    report = mem.check_health()
    assert report["status"] == "unhealthy"
    schema = _messages(report, "schema")
    assert "memories_words_insert" in schema and "memories_words_update" in schema
    fts = [f for f in report["findings"] if f["check"] == "fts"]
    assert [f["message"].split()[0] for f in fts] == ["memories_words"]  # the trigram index is intact
    assert {f"mem:{kept}", f"mem:{unindexed}", f"mem:{stale}"} <= set(fts[0]["refs"])
    assert "1 indexed with old text" in fts[0]["message"]
    assert mem.recall("a", "running")["results"] == []  # the lost entry hides the row from the word channel

    fixed = mem.check_health(fix=True)
    assert not _messages(fixed, "schema") and not _messages(fixed, "fts"), fixed["findings"]
    assert fixed["repairs"]["schema"]["remaining"] == 0 and fixed["repairs"]["fts"]["remaining"] == 0
    assert [r["id"] for r in mem.recall("a", "running")["results"]] == [kept]
    again = mem.check_health()
    assert not _messages(again, "schema") and not _messages(again, "fts")
    # The recreated triggers work.
    later = mem.store("a", "she swims across the bay")["id"]
    assert later in [r["id"] for r in mem.recall("a", "swimming")["results"]]


def test_non_ascii_rows_are_not_called_mismatched(mem: Memory) -> None:
    mem.store("a", "café résumé naïve — 東京タワー and ﬁne ligatures ½ ²")
    assert not _messages(mem.check_health(), "fts")
