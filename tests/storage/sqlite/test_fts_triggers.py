"""The trigram FTS tables follow inserts, updates and deletes."""

from __future__ import annotations

from cpersona.memory import Memory


def _fts_ids(memory: Memory, text: str) -> list[int]:
    conn = memory.storage.db.connection()
    return [
        r[0]
        for r in conn.execute("SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?", (f'"{text}"',))
    ]


def test_update_and_delete_keep_fts_in_step(memory: Memory) -> None:
    stored = memory.store("a", "the quarterly report is due on Friday")
    rid = stored["id"]
    assert _fts_ids(memory, "quarterly") == [rid]
    memory.update_memory(rid, "the annual budget is due on Monday")
    assert _fts_ids(memory, "quarterly") == []
    assert _fts_ids(memory, "annual budget") == [rid]
    memory.delete_memory(rid)
    assert _fts_ids(memory, "annual") == []
    conn = memory.storage.db.connection()
    conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")


def test_episode_fts_covers_summary_and_keywords(memory: Memory) -> None:
    ep = memory.archive_episode("a", "we fixed the login bug", keywords=["authentication", "oauth"])
    conn = memory.storage.db.connection()
    hits = [r[0] for r in conn.execute("SELECT rowid FROM episodes_fts WHERE episodes_fts MATCH '\"oauth\"'")]
    assert hits == [ep["id"]]
    memory.delete_episode(ep["id"])
    assert (
        conn.execute("SELECT COUNT(*) FROM episodes_fts WHERE episodes_fts MATCH '\"oauth\"'").fetchone()[0]
        == 0
    )


def test_japanese_found_by_three_character_substring(memory: Memory) -> None:
    memory.store("a", "昨日は東京タワーに行きました")
    memory.store("a", "大阪城の桜がきれいでした")
    results = memory.recall("a", "東京タ")["results"]
    assert [r["content"] for r in results] == ["昨日は東京タワーに行きました"]


def test_short_query_uses_like_fallback(memory: Memory) -> None:
    memory.store("a", "I write Go at work")
    memory.store("a", "nothing relevant here")
    outcome = memory.recall("a", "Go")
    assert outcome["search"]["keyword"] == "like"
    assert [r["content"] for r in outcome["results"]] == ["I write Go at work"]
