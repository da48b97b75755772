"""Character pairs for Japanese and Chinese queries: the trigram channel's rows ranked again by the
query's two-character pieces.

Japanese and Chinese write without spaces, and most of their content words are two characters
(大学, 父親, 死去). The trigram index cannot look up a piece shorter than three characters, so a
question shares a word with its answer only where the next character happens to be the same too
("の大学" against "ケンブリッジ大学で"). Pairs are the usual unit of keyword search for such text.

The trigram index still chooses the rows (its bm25 over the whole corpus: a rare name in the
question finds its rows). Those rows, the channel's list, are then scored again: bm25 over the
query's pairs, counted in each row's text, with each pair's rarity and the mean length taken from
the list itself, plus ``TRIGRAM_SHARE`` of the row's trigram score. Rarity within the list is what
ranks the list: a pair every row holds (the name that found them) tells them apart no more than the
question's particles do, while the pair only the answer holds ("王女", "出生") now counts. Rows keep
a share of their trigram score, so what the whole corpus says of a term's rarity still weighs.

A Japanese query's pieces also hold its longer runs of kanji or of katakana whole (``pieces``), so a
row holding the word outranks one holding its pairs apart.

Only a query with a CJK run is scored this way; any other keeps the trigram ranking, untouched.
Chosen and confirmed on Japanese Wikipedia paragraphs with questions people wrote (JaQuAD) and on
our Japanese documentation set (docs/research/recall-round-three/japanese.md#character-pairs-for-japanese).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from cpersona.retrieval.match_query import CJK_CLASS, KANA_CLASS, KANJI_CLASS, KATAKANA_CLASS

#: What the trigram score weighs beside the pairs' (chosen on the choose halves, then again with the
#: whole runs on five fresh sets: 0.25, 0.35, 0.5 read within a question of each other; 0.35 highest).
TRIGRAM_SHARE = 0.35
#: Rows of the trigram list scored again (the channel then keeps its usual depth of them).
LIST_ROWS = 30
#: bm25's usual constants (k1, b), as FTS5's own.
K1 = 1.2
B = 0.75
#: Pieces a query gives at most (a long query must not cost in proportion to its length).
MAX_PIECES = 96
#: Characters of a row read for counting: the cost of scoring a list of long records stays bounded.
MAX_TEXT_CHARS = 4_000

_RUNS = re.compile(f"[{CJK_CLASS}]+|[^\\W_{CJK_CLASS}]+", re.UNICODE)
_CJK = re.compile(f"[{CJK_CLASS}]")
#: Hiragana or katakana: the query is Japanese, whose change of script marks a word's edge.
_KANA = re.compile(f"[{KANA_CLASS}]")
#: A run of kanji, or of katakana (with its long mark), of ``MIN_WORD_RUN`` characters or more.
MIN_WORD_RUN = 3
_WORD_RUNS = re.compile(f"[{KANJI_CLASS}]{{{MIN_WORD_RUN},}}|[{KATAKANA_CLASS}]{{{MIN_WORD_RUN},}}")


def pieces(query: str) -> tuple[str, ...]:
    """The query's pieces when it holds a CJK run, else (): each CJK run's overlapping pairs (a run of
    one character whole), and every other word of two characters or more whole, lowercased, once.

    A Japanese query (one holding kana) also gives each run of one script, kanji or katakana, of three
    characters or more whole, after its pairs: where Japanese changes script a word usually starts or
    ends (ケンブリッジ, 相対性理論), so a row holding the whole run holds the word, not only its pairs.
    Chinese writes every word in one script, where such a run is a clause, not a word: not taken."""
    if not _CJK.search(query):
        return ()
    lowered = query.lower()
    out: dict[str, None] = {}
    for run in _RUNS.findall(lowered):
        if _CJK.match(run):
            for piece in [run] if len(run) < 2 else (run[i : i + 2] for i in range(len(run) - 1)):
                out[piece] = None
        elif len(run) >= 2:
            out[run] = None
        if len(out) >= MAX_PIECES:
            break
    if _KANA.search(lowered):
        for word in _WORD_RUNS.findall(lowered):
            out[word] = None
    return tuple(out)[:MAX_PIECES]


def list_idf(held: Sequence[int], rows: int) -> list[float]:
    """FTS5's idf of each term held by ``held[i]`` of a list of ``rows`` rows, floored just above 0:
    a term in more than half the list weighs almost nothing (also the best passage's rarity)."""
    return [max(1e-6, math.log((rows - d + 0.5) / (d + 0.5))) for d in held]


def rescore(
    hits: Sequence[tuple[int, float]], texts: Mapping[int, str], query_pieces: Sequence[str]
) -> list[tuple[int, float]]:
    """``hits`` (id, trigram score; best first) scored again: bm25 of ``query_pieces`` within the list
    plus ``TRIGRAM_SHARE`` of the trigram score, best first (ties: the trigram order). A hit whose
    text is missing keeps only its trigram share."""
    if not hits or not query_pieces:
        return list(hits)
    lowered = {rid: texts.get(rid, "")[:MAX_TEXT_CHARS].lower() for rid, _ in hits}
    counts = {rid: [text.count(p) for p in query_pieces] for rid, text in lowered.items()}
    n = len(hits)
    mean_length = sum(len(t) for t in lowered.values()) / n or 1.0
    held = [sum(1 for rid, _ in hits if counts[rid][i]) for i in range(len(query_pieces))]
    idf = list_idf(held, n)
    scored: list[tuple[float, int, int]] = []
    for order, (rid, trigram) in enumerate(hits):
        norm = K1 * (1 - B + B * len(lowered[rid]) / mean_length)
        pair_score = sum(w * f * (K1 + 1) / (f + norm) for w, f in zip(idf, counts[rid], strict=True) if f)
        scored.append((pair_score + TRIGRAM_SHARE * trigram, order, rid))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [(rid, score) for score, _, rid in scored]
