"""Character pairs for Japanese and Chinese queries (retrieval/pair_rescore.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cpersona.retrieval.pair_rescore import MAX_PIECES, TRIGRAM_SHARE, pieces, rescore


def test_a_query_without_cjk_has_no_pieces() -> None:
    assert pieces("Where did Henry Cavendish study?") == ()
    assert pieces("") == ()


def test_a_japanese_query_gives_its_pairs_and_its_other_words_whole() -> None:
    assert pieces("父の大学") == ("父の", "の大", "大学")
    assert pieces("Vue の key 属性") == ("vue", "の", "key", "属性")
    # A one-letter word is too common to count; a one-character CJK run is a word of its own.
    assert pieces("v 父") == ("父",)


def test_a_japanese_query_also_gives_its_long_runs_of_one_script_whole() -> None:
    assert pieces("ケンブリッジ大学で") == (
        *("ケン", "ンブ", "ブリ", "リッ", "ッジ", "ジ大", "大学", "学で"),
        "ケンブリッジ",  # katakana, six characters; 大学 is a pair already
    )
    assert pieces("相対性理論とは") == ("相対", "対性", "性理", "理論", "論と", "とは", "相対性理論")
    # Chinese has no kana: a run of one script is a clause there, not a word.
    assert pieces("相对论是谁提出的") == ("相对", "对论", "论是", "是谁", "谁提", "提出", "出的")


def test_a_row_holding_the_whole_word_rises_above_one_holding_its_pairs_apart() -> None:
    texts = {
        1: "ケンとンブとブリとリッとッジ、ケンとンブとブリとリッとッジ。",  # every pair, twice, apart
        2: "昨日はケンブリッジで長い一日を過ごした。",  # the word, once
        3: "公園で遊んだ。",
        4: "駅で待っていた。",
        5: "家で寝た。",
    }
    hits = [(rid, 1.0) for rid in texts]
    ranked = [rid for rid, _ in rescore(hits, texts, pieces("ケンブリッジ"))]
    assert ranked[:2] == [2, 1]
    # By its pairs alone row 1 leads: the whole word is what puts row 2 first.
    by_pairs = [rid for rid, _ in rescore(hits, texts, pieces("ケンブリッジ")[:-1])]
    assert by_pairs[:2] == [1, 2]


def test_a_pair_repeated_in_the_query_is_counted_once() -> None:
    assert pieces("大学大学") == ("大学", "学大")


@given(st.text(max_size=2000))
def test_any_text_gives_a_bounded_list_of_distinct_pieces(text: str) -> None:
    found = pieces(text)
    assert len(found) <= MAX_PIECES
    assert len(set(found)) == len(found)


def test_the_row_holding_the_pair_only_it_holds_rises_above_a_better_trigram_match() -> None:
    texts = {
        1: "キャヴェンディッシュは1766年の論文で水素の発生を発表した。",
        2: "キャヴェンディッシュは化学者で、ケンブリッジ大学で学んだ。",
        3: "キャヴェンディッシュの父は財産を所有していた。",
    }
    hits = [(1, 3.0), (2, 2.9), (3, 2.0)]
    ranked = rescore(hits, texts, pieces("キャヴェンディッシュの大学"))
    assert [rid for rid, _ in ranked] == [2, 3, 1]  # row 3 holds "ュの" as the query does
    # Every row holds the name: within the list its pairs weigh almost nothing, and the row that
    # holds no other piece of the query keeps about half its trigram score.
    assert abs(dict(ranked)[1] - 3.0 * TRIGRAM_SHARE) < 0.01


def test_without_pieces_or_text_the_trigram_order_stays() -> None:
    hits = [(5, 2.0), (4, 1.0)]
    assert rescore(hits, {5: "a", 4: "b"}, ()) == hits
    # Texts missing: each keeps its trigram share, in the trigram order.
    assert rescore(hits, {}, ("大学",)) == [(5, 2.0 * TRIGRAM_SHARE), (4, 1.0 * TRIGRAM_SHARE)]


def test_equal_scores_keep_the_trigram_order() -> None:
    hits = [(9, 1.0), (8, 1.0), (7, 1.0)]
    texts = dict.fromkeys((9, 8, 7), "同じ文章")
    assert [rid for rid, _ in rescore(hits, texts, ("文章",))] == [9, 8, 7]
