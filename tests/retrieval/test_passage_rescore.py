"""The best passage: on a corpus of long records the memory keyword lists rank rows by the window
where the query's words meet (retrieval/passage_rescore.py)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cpersona.config import Settings
from cpersona.memory import Memory
from cpersona.retrieval import scoring
from cpersona.retrieval.passage_rescore import (
    INDEX_SHARE,
    K1,
    MAX_WORDS,
    _best_window,
    query_words,
    rescore,
    where,
)
from cpersona.storage.scope import Scope
from cpersona.storage.sqlite.rows import SqliteTableRows
from cpersona.storage.values import Row


def test_query_words_are_stems_without_stop_words_or_short_words() -> None:
    assert query_words("What was the name of the place you recommended in Valparaiso?") == (
        "name",
        "place",
        "recomm",
        "valpar",
    )
    assert query_words("") == ()
    assert query_words("is it ok?") == ()


@given(st.text(max_size=2000))
def test_any_query_gives_a_bounded_list_of_distinct_stems(text: str) -> None:
    found = query_words(text)
    assert len(found) <= MAX_WORDS
    assert len(set(found)) == len(found)


def test_a_long_stem_matches_the_words_it_begins_a_short_one_only_itself() -> None:
    found = where(
        {1: "Recommendations: a recommended placement, two places, one place."}, ("recomm", "place")
    )
    assert [word for _, word in found[1]] == [0, 0, 1]  # "placement" and "places" are not "place"
    assert where({2: "a party at the artisan fair"}, ("art",)) == {2: []}  # never inside a word


def filler(n: int) -> str:
    return " ".join(f"sentence {i} talks about weather patterns and ocean currents." for i in range(n))


def test_the_row_whose_one_paragraph_holds_the_question_rises_above_scattered_matches() -> None:
    words = query_words("Which place did you recommend in Valparaiso?")
    texts = {
        # Many matches of the common words, far apart: bm25 over the whole row liked it best.
        1: " ".join(f"A place to stay. {filler(12)} I recommend it." for _ in range(4)),
        # The rare name beside the other words, once, in a long answer.
        2: f"{filler(40)} In Valparaiso the place I recommend is Cafe Turri. {filler(40)}",
        **{n: f"{filler(n)} a place" for n in range(3, 12)},
    }
    hits = [(1, 9.0), *((n, 7.0) for n in range(3, 12)), (2, 5.0)]
    ranked = rescore(hits, where(texts, words), words)
    assert [rid for rid, _ in ranked][0] == 2
    assert sorted(rid for rid, _ in ranked) == sorted(texts)


def test_a_row_without_its_text_keeps_its_share_of_the_index_score_and_ties_keep_the_index_order() -> None:
    words = ("tomato",)
    ranked = rescore([(7, 4.0), (8, 4.0), (9, 2.0)], {}, words)
    assert ranked == [(7, INDEX_SHARE * 4.0), (8, INDEX_SHARE * 4.0), (9, INDEX_SHARE * 2.0)]
    assert rescore([(7, 4.0)], {}, ()) == [(7, 4.0)]  # no query word: untouched


@given(
    st.lists(st.tuples(st.integers(0, 50), st.floats(0, 20)), max_size=30, unique_by=lambda h: h[0]),
    st.dictionaries(st.integers(0, 50), st.text(max_size=400), max_size=30),
    st.text(max_size=200),
)
def test_rescoring_returns_the_same_rows(
    hits: list[tuple[int, float]], texts: dict[int, str], query: str
) -> None:
    words = query_words(query)
    ranked = rescore(hits, where(texts, words), words)
    assert sorted(rid for rid, _ in ranked) == sorted(rid for rid, _ in hits)


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory(Settings(db_path=tmp_path / "m.db", embedding_mode="none", update_check=False)) as memory:
        yield memory


def channel_order(memory: Memory, query: str, channel: str) -> list[int]:
    out = memory.recall("chat", query, record=False, trace=True)
    return [int(hit["ref"].split(":")[1]) for hit in out["trace"]["channels"][channel]["hits"]]


def test_only_a_corpus_of_long_records_is_ranked_by_its_best_passage(mem: Memory) -> None:
    scattered = mem.store(
        "chat", " ".join(f"A place to stay. {filler(12)} I recommend it." for _ in range(4))
    )["id"]
    for n in range(10):  # the list the rarity of each word is read from
        mem.store("chat", f"{filler(n)} one more place")
    answer = mem.store(
        "chat", f"{filler(40)} In Valparaiso the place I recommend is Cafe Turri. {filler(40)}"
    )["id"]
    query = "Which place did you recommend in Valparaiso?"
    before = {name: channel_order(mem, query, name) for name in ("fts_memories", "fts_words")}
    assert (
        before["fts_memories"][0] == scattered
    )  # whole-row bm25: the long answer's length counts against it
    # The corpus read as long records (the calibration service's weight): both lists by passage.
    mem.recaller.keyword_weight = lambda agent: 0.3
    for name in ("fts_memories", "fts_words"):
        assert channel_order(mem, query, name)[0] == answer
    assert channel_order(mem, "ケンブリッジ大学 place", "fts_memories") == channel_order(
        mem, "ケンブリッジ大学 place", "fts_memories"
    )


def test_a_row_the_best_passage_read_is_not_read_again_and_the_answer_is_the_same(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Hydration takes the rows the best passage read in scope (ChannelQuery.rows) and reads only the
    # others: one read per row per recall, and the answer of a recall that reads them all again.
    for n in range(12):
        mem.store("chat", f"{filler(n + 8)} the place I recommend in Valparaiso, number {n}")
    mem.recaller.keyword_weight = lambda agent: 0.3  # the corpus read as long records
    query = "Which place did you recommend in Valparaiso?"
    reads: list[int] = []
    real_get_many = SqliteTableRows.get_many

    def counting(self: SqliteTableRows, ids: Sequence[int], scope: Scope | None = None) -> dict[int, Row]:
        reads.extend(ids)
        return real_get_many(self, ids, scope)

    monkeypatch.setattr(SqliteTableRows, "get_many", counting)
    answer = mem.recall("chat", query, record=False)
    assert answer["results"] and len(reads) == len(set(reads))
    real_hydrate = scoring.hydrate
    monkeypatch.setattr(scoring, "hydrate", lambda *args: real_hydrate(*args[:6]))  # no rows handed on
    reads.clear()
    assert mem.recall("chat", query, record=False)["results"] == answer["results"]
    assert len(reads) > len(set(reads))  # without them hydration reads the best passage's rows again


@given(st.lists(st.tuples(st.integers(0, 2000), st.integers(0, 3)), max_size=60))
def test_the_best_window_is_the_best_of_every_window_counted_afresh(
    occurrences: list[tuple[int, int]],
) -> None:
    found = sorted(occurrences)
    idf = [0.5, 1.0, 2.0, 3.0]

    def afresh(start: int) -> float:
        counts: dict[int, int] = {}
        for pos, word in found:
            if found[start][0] <= pos <= found[start][0] + 100:
                counts[word] = counts.get(word, 0) + 1
        return sum(idf[w] * f * (K1 + 1) / (f + K1) for w, f in counts.items())

    expected = max((afresh(i) for i in range(len(found))), default=0.0)
    assert _best_window(found, idf, 100) == pytest.approx(expected)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(min_size=1, max_size=400))
@example("Which café in Valparaiso was the recommended place?")
@example("valparaiso " * 40)
def test_any_query_on_long_records_is_answered_from_the_stored_rows(mem: Memory, query: str) -> None:
    # Whatever an agent asks, the best passage ranks only rows the channels found and never fails.
    if not mem.list_memories("chat")["items"]:
        for n in range(12):
            mem.store("chat", f"{filler(30 + n)} Valparaiso café {n}, recommended place. {filler(20)}")
    mem.recaller.keyword_weight = lambda agent: 0.3
    stored = {row["id"] for row in mem.list_memories("chat")["items"]}
    if not query.strip():
        return
    out = mem.recall("chat", query, record=False)
    assert {row["id"] for row in out["results"] if row.get("type") == "memory"} <= stored
