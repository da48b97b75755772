"""The word-level FTS5 index (migration 2): upgrade of an old file, triggers, stemmed matches, safe MATCH."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.memory import Memory
from cpersona.retrieval.match_query import MAX_TERMS, query_terms
from cpersona.storage.scope import Scope
from cpersona.storage.sqlite.db import Database
from cpersona.storage.sqlite.keyword import SqliteKeywordSearch, words_expression
from cpersona.storage.sqlite.migrations import LATEST_VERSION, MIGRATIONS, current_version, migrate
from cpersona.storage.values import QueryTerms

NOW = "2026-01-01T00:00:00.000000Z"


def _word_ids(conn: sqlite3.Connection, word: str) -> list[int]:
    rows = conn.execute(
        "SELECT rowid FROM memories_words WHERE memories_words MATCH ? ORDER BY rowid", (f'"{word}"',)
    )
    return [int(r[0]) for r in rows]


def _insert(conn: sqlite3.Connection, content: str) -> int:
    return int(
        conn.execute(
            "INSERT INTO memories(agent_id, content, timestamp, created_at) VALUES ('a', ?, ?, ?)",
            (content, NOW, NOW),
        ).lastrowid
    )


def test_schema_1_file_is_upgraded_and_back_filled(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = Database(path)
    assert migrate(old, MIGRATIONS[:1]) == [1]  # a file written by the previous release
    conn = old.connection()
    runs = _insert(conn, "She runs along the river every morning")
    swims = _insert(conn, "He swims in the lake on Sundays")
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'memories_words'").fetchone() is None
    old.close()

    new = Database(path)
    assert migrate(new) == [m.version for m in MIGRATIONS[1:]]  # 2, 3 and whatever came after
    conn = new.connection()
    assert current_version(conn) == LATEST_VERSION
    assert _word_ids(conn, "running") == [runs]  # porter: running ~ runs
    assert _word_ids(conn, "swimming") == [swims]
    conn.execute("INSERT INTO memories_words(memories_words) VALUES ('integrity-check')")
    new.close()

    # The real upgrade path: a Memory opened on the old file recalls by stem.
    settings = Settings(
        db_path=path,
        embedding_mode="none",
        update_check=False,
        auto_fetch_model=False,
        models_dir=tmp_path / "models",
        operating_context_path=tmp_path / "oc.toml",
    )
    with Memory(settings, backend=NoEmbeddings()) as mem:
        out = mem.recall("a", "running")
        assert [r["id"] for r in out["results"]] == [runs]


def test_triggers_keep_word_index_in_step(memory: Memory) -> None:
    conn = memory.storage.db.connection()
    rid = memory.store("a", "the team deployed the billing service")["id"]
    assert _word_ids(conn, "deploying") == [rid]
    memory.update_memory(rid, "the team is painting the office")
    assert _word_ids(conn, "deploying") == []
    assert _word_ids(conn, "painted") == [rid]
    memory.delete_memory(rid)
    assert _word_ids(conn, "painted") == []
    conn.execute("INSERT INTO memories_words(memories_words) VALUES ('integrity-check')")


def test_word_channel_finds_a_stem_the_trigram_channel_misses(memory: Memory) -> None:
    target = memory.store("a", "She runs along the river every morning")["id"]
    memory.store("a", "lunch was ramen with the team")
    search = SqliteKeywordSearch(memory.storage.db.connection())
    terms = query_terms("running")
    # Trigram: the substring stem "runn" is not in "runs", and the LIKE stand-in finds nothing either.
    assert search.memories(terms, Scope("a"), 10).hits == []
    words = search.memories_words(terms, Scope("a"), 10)
    assert words.method == "fts" and [i for i, _ in words.hits] == [target]
    out = memory.recall("a", "running")
    assert [r["id"] for r in out["results"]] == [target]
    assert out["search"]["keyword_channels"] == {
        "fts_memories": "like",
        "fts_words": "fts",
        "fts_episodes": "fts",
    }


def test_word_channel_respects_scope_and_source(memory: Memory) -> None:
    memory.store("a", "runs in the park", source={"id": "chat:1"})
    other = memory.store("b", "runs in the park")["id"]
    search = SqliteKeywordSearch(memory.storage.db.connection())
    terms = query_terms("running")
    assert [i for i, _ in search.memories_words(terms, Scope("b"), 10).hits] == [other]
    assert search.memories_words(terms, Scope("a"), 10, source_id="mail:").hits == []
    assert len(search.memories_words(terms, Scope("a"), 10, source_id="chat:").hits) == 1
    assert search.memories_words(terms, Scope("a"), 0).method == "none"


def test_word_terms_drop_function_words_and_are_capped() -> None:
    assert query_terms("When did Melanie paint the sunrise?").words == ("melanie", "paint", "sunrise")
    assert query_terms("what is it").words == ("what", "is", "it")  # only function words: keep them
    assert len(query_terms(" ".join(f"w{i}" for i in range(500))).words) == MAX_TERMS
    assert words_expression(QueryTerms((), (), ())) is None
    assert words_expression(QueryTerms((), (), ('say "hi"', "or"))) == '"say ""hi""" OR "or"'


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(st.text(max_size=200))
def test_any_text_is_a_valid_word_match(text: str) -> None:
    with closing(sqlite3.connect(":memory:")) as conn:
        conn.execute(
            "CREATE VIRTUAL TABLE w USING fts5(content, tokenize='porter unicode61 remove_diacritics 2')"
        )
        conn.execute("INSERT INTO w(rowid, content) VALUES (1, 'runs \"quoted\" NEAR(a b) col:x * ^start')")
        expression = words_expression(query_terms(text))
        if expression is not None:
            conn.execute("SELECT rowid FROM w WHERE w MATCH ?", (expression,)).fetchall()


_NASTY = st.text(
    alphabet=st.sampled_from(list("\"*:()^-+ NEARORANDnot{}[],.'\\_é東京\u200b\x00")), max_size=60
)


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(st.one_of(st.text(max_size=120), _NASTY))
def test_word_search_never_raises_on_a_real_file(memory: Memory, text: str) -> None:
    if not memory.list_memories("a")["items"]:
        memory.store("a", 'runs "quoted" NEAR(a b) col:x * ^start 東京タワー café')
    search = SqliteKeywordSearch(memory.storage.db.connection())
    hits = search.memories_words(query_terms(text), Scope("a"), 10)
    assert hits.method in {"fts", "none"}
