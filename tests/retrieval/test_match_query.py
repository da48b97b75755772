"""Safe MATCH building: every query is plain text to FTS."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from pg_cluster import BOTH_ENGINES

from cpersona.config import Settings
from cpersona.memory import Memory
from cpersona.retrieval.match_query import (
    MAX_QUERY_TERM_CHARS,
    MAX_TERM_CHARS,
    MAX_TERMS,
    MAX_WORD_CHARS,
    query_terms,
)
from cpersona.storage.sql_text import like_pattern
from cpersona.storage.sqlite.keyword import match_expression


def test_function_words_dropped_and_words_stemmed() -> None:
    terms = query_terms("When did Melanie paint the sunrise paintings?")
    assert terms.match == ("melanie", "paint", "sunrise", "painting")


def test_only_function_words_keeps_them() -> None:
    assert query_terms("what is it").match == ("what",)


def test_cjk_runs_become_overlapping_trigrams() -> None:
    assert query_terms("東京タワー").match == ("東京タ", "京タワ", "タワー")


def test_identifiers_keep_their_hyphens_and_dots_beside_their_parts() -> None:
    # "v-for" split at the hyphen left "v" (too short) and "for" (a function word): nothing to match
    assert query_terms("v-for の 何 属性はか").match == ("v-for", "属性は", "性はか")
    assert query_terms("CVE-2024-3094").match == ("cve-2024-3094", "cve", "2024", "3094")
    assert query_terms("Vite 6.3.0").match == ("vite", "6.3.0")
    # an identifier is not stemmed; a sentence's full stop is no part of a word
    assert query_terms("Vue.js notes.").match == ("vue.js", "vue", "note")


def test_a_token_mixing_scripts_is_cut_where_the_script_changes() -> None:
    assert query_terms("2016年以降").match == ("2016", "年以降")
    assert query_terms("F-15戦闘機").match == ("f-15", "戦闘機")


def test_short_words_go_to_like_only() -> None:
    terms = query_terms("Go")
    assert terms.match == () and terms.like == ("go",) and match_expression(terms) is None


def test_term_count_is_capped() -> None:
    terms = query_terms(" ".join(f"w{i:03d}" for i in range(500)))
    assert len(terms.match) == MAX_TERMS


def test_the_characters_of_a_querys_terms_are_capped_in_query_order() -> None:
    """Issue 17: 48 terms of 32 characters each still cost seconds of phrase matching on repetitive rows."""
    tokens = [f"{i:02d}" + "ab" * 20 for i in range(100)]  # distinct 32-character prefixes
    terms = query_terms(" ".join(tokens))
    fits = MAX_QUERY_TERM_CHARS // MAX_TERM_CHARS
    assert terms.match == tuple(t[:MAX_TERM_CHARS] for t in tokens[:fits])
    assert terms.like == terms.match
    assert sum(map(len, terms.match)) <= MAX_QUERY_TERM_CHARS


def test_like_pattern_escapes_wildcards() -> None:
    assert like_pattern("50%_off\\") == "%50\\%\\_off\\\\%"


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_text_is_a_valid_match_expression(text: str) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='trigram')")
    conn.execute("INSERT INTO t(body) VALUES ('some stored text 東京タワー NEAR(x) \"quoted\"')")
    expression = match_expression(query_terms(text.replace("\x00", "")))
    if expression is not None:
        conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,)).fetchall()


def test_one_long_token_is_cut_to_the_term_length_bound() -> None:
    """Issue 17 defect 3: ``"a" * 8000`` became one FTS5 phrase of 7,998 trigrams (seconds, hundreds of MB)."""
    terms = query_terms("a" * 8000)
    assert terms.match == ("a" * MAX_TERM_CHARS,)
    assert terms.like == ("a" * MAX_TERM_CHARS,)
    assert terms.words == ()  # a cut word is another word: the whole-word index gets none this long


def test_every_term_of_any_query_is_bounded() -> None:
    """Per term at most MAX_TERM_CHARS characters, per channel at most MAX_TERMS terms."""
    queries = [
        "a" * 8000,
        " ".join("x" * 40 + str(i) for i in range(300)),  # many long, distinct terms
        "東" * 8000,  # one CJK run
        " ".join(f"{i:02d}" for i in range(2700)),  # thousands of short tokens (LIKE only)
        "Internationalization " * 400,
    ]
    for query in queries:
        terms = query_terms(query)
        for group, longest in (
            (terms.match, MAX_TERM_CHARS),
            (terms.like, MAX_TERM_CHARS),
            (terms.words, MAX_WORD_CHARS),
        ):
            assert len(group) <= MAX_TERMS
            assert all(len(term) <= longest for term in group)
        assert sum(len(t) for t in terms.match) <= MAX_QUERY_TERM_CHARS
        assert sum(len(t) for t in terms.like) <= MAX_QUERY_TERM_CHARS


def test_a_cut_term_is_a_prefix_so_it_still_finds_the_row() -> None:
    """Trigram MATCH and LIKE look for substrings: the cut term's prefix matches every row the whole term did."""
    long_word = "pneumonoultramicroscopicsilicovolcanoconiosis"  # 45 characters
    terms = query_terms(f"what is {long_word}?")
    assert terms.match == (long_word[:MAX_TERM_CHARS],)
    assert long_word.startswith(terms.like[0])
    assert terms.words == (long_word,)  # the word index looks words up whole
    assert query_terms("x" * (MAX_WORD_CHARS + 1)).words == ()


def test_many_short_tokens_give_the_first_distinct_ones_to_like() -> None:
    """Thousands of distinct two-character tokens (none reaches the trigram channel): LIKE gets the first
    MAX_TERMS of them, in query order (benchmarks/reliability, part query, measures what such a query costs)."""
    tokens = [f"{i:02x}" for i in range(256)]
    terms = query_terms(" ".join(tokens * 10))
    assert terms.match == () and terms.like == tuple(tokens[:MAX_TERMS])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.text(alphabet=st.sampled_from(list("ab東京 x1_-.")), min_size=1, max_size=400), max_size=40
    ).map(" ".join)
)
def test_the_bounds_hold_for_any_query(query: str) -> None:
    terms = query_terms(query)
    assert len(terms.match) <= MAX_TERMS and len(terms.like) <= MAX_TERMS and len(terms.words) <= MAX_TERMS
    assert (
        sum(map(len, terms.match)) <= MAX_QUERY_TERM_CHARS
        and sum(map(len, terms.like)) <= MAX_QUERY_TERM_CHARS
    )
    assert all(len(t) <= MAX_TERM_CHARS for t in (*terms.match, *terms.like))
    assert all(len(w) <= MAX_WORD_CHARS for w in terms.words)


@BOTH_ENGINES
def test_keyword_recall_finds_an_identifier_by_its_whole_name(tmp_path: Path, new_db_url) -> None:
    """A real keyword-only recall on both engines: split at its hyphen, "v-for" was "for" (a function
    word) and "v" (too short), and the row that says "for" most came first."""
    with Memory(
        Settings(db_path=tmp_path / "k.db", db_url=new_db_url(), embedding_mode="none", update_check=False)
    ) as memory:
        memory.store("a", "Give every item rendered by v-for a key attribute.")
        memory.store("a", "for each for all for now: a loop for the sake of it")
        memory.store("a", "The key attribute also tells v-if branches apart.")
        out = memory.recall("a", "v-for", limit=3)
        assert out["results"][-1]["content"].startswith("Give every item rendered by v-for")
