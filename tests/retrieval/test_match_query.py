"""Safe MATCH building: every query is plain text to FTS."""

from __future__ import annotations

import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st

from cpersona.retrieval.match_query import MAX_TERMS, query_terms
from cpersona.storage.keyword import like_pattern, match_expression


def test_function_words_dropped_and_words_stemmed() -> None:
    terms = query_terms("When did Melanie paint the sunrise paintings?")
    assert terms.match == ("melanie", "paint", "sunrise", "painting")


def test_only_function_words_keeps_them() -> None:
    assert query_terms("what is it").match == ("what",)


def test_cjk_runs_become_overlapping_trigrams() -> None:
    assert query_terms("東京タワー").match == ("東京タ", "京タワ", "タワー")


def test_short_words_go_to_like_only() -> None:
    terms = query_terms("Go")
    assert terms.match == () and terms.like == ("go",) and match_expression(terms) is None


def test_term_count_is_capped() -> None:
    terms = query_terms(" ".join(f"word{i}" for i in range(500)))
    assert len(terms.match) == MAX_TERMS


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
