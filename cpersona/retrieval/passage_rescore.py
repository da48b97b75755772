"""The best passage: on a corpus of long records, the memory keyword lists ranked again by the part of
each row where the query's words meet.

bm25 scores a whole row: its length normalisation pushes a long answer down even when one of its
paragraphs holds the question's rare name ("Valparaiso") beside its other words, while a long answer
that holds a common word of the question here and there ("place", "recommended") keeps its rank. A
person reading the row would look at the paragraph. So each row of the channel's list is scored again
by its best window of ``WINDOW_WORDS`` words: bm25 of the query's words within that window, each word's
rarity (FTS5's idf) taken from the list itself, plus ``INDEX_SHARE`` of the row's own score from the
index (which keeps what the whole corpus says of a word's rarity). Rarity within the list is what tells
the rows apart, as for the character pairs (retrieval/pair_rescore.py): the word that found every row
weighs little, the word only the answer holds counts.

Words are compared by their first ``STEM_CHARS`` characters ("recommended", "recommendation"), after
lowercasing; stop words and words shorter than three characters are left out (match_query.STOPWORDS).
A window is measured in characters (``WINDOW_WORDS`` words of about six), found from the positions of
the query's words in the row, so a row costs in proportion to its matches, not its words.

Only a corpus of long records is scored this way (the keyword weight of long records applies; a
short-row corpus such as LoCoMo and a question written without spaces keep the index's ranking).
Chosen on the choose halves of five long-history sets and confirmed on nine others:
docs/research/recall-round-three/long-records.md#the-best-passage.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from cpersona.retrieval.match_query import STOPWORDS
from cpersona.retrieval.pair_rescore import K1, list_idf

#: The window a passage is scored in (chosen against 30 on the choose halves: the two read alike).
WINDOW_WORDS = 60
#: Characters per word, to measure a window in characters.
CHARS_PER_WORD = 6
#: What the index's own score weighs beside the passage's (chosen on the choose halves: 0, 0.25, 0.5).
INDEX_SHARE = 0.25
#: Rows of the list scored again (the channel keeps its usual depth of them).
LIST_ROWS = 30
#: Words compared by this many leading characters: a crude stem that matches a word's forms.
STEM_CHARS = 6
#: Query words used at most: a long query must not cost in proportion to its length.
MAX_WORDS = 32
#: Characters of a row read (the default content cap): a row stored under a raised cap costs no more.
MAX_TEXT_CHARS = 16_000
#: Occurrences of one query word read per row: past this the word is the row's own common word, which
#: bm25's saturation and the list's rarity already weigh at almost nothing.
MAX_OCCURRENCES = 64

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def query_words(query: str) -> tuple[str, ...]:
    """The query's words as stems: lowercased, three characters or more, no stop words, once each."""
    out: dict[str, None] = {}
    for word in _WORD.findall(query.lower()):
        if len(word) >= 3 and word not in STOPWORDS:
            out[word[:STEM_CHARS]] = None
        if len(out) >= MAX_WORDS:
            break
    return tuple(out)


def _occurrences(text: str, words: Sequence[str]) -> list[tuple[int, int]]:
    """(character position, query word index) of each query word in ``text`` (lowercased), in order.
    A stem of ``STEM_CHARS`` characters matches any word it begins; a shorter one only itself.
    ``str.find`` per word: a long row costs its matches, not a regex walk over every character."""
    found = []
    for word, stem in enumerate(words):
        whole = len(stem) < STEM_CHARS
        at = text.find(stem)
        kept = 0
        while at >= 0 and kept < MAX_OCCURRENCES:
            after = at + len(stem)
            if (at == 0 or not _is_word_char(text[at - 1])) and (
                not whole or after == len(text) or not _is_word_char(text[after])
            ):
                found.append((at, word))
                kept += 1
            at = text.find(stem, after)
    found.sort()
    return found


def _is_word_char(char: str) -> bool:
    return char.isalnum()


def _saturated(count: int) -> float:
    """bm25's term-frequency part for ``count`` occurrences in a window (length normalisation 1)."""
    return count * (K1 + 1) / (count + K1)


def _best_window(found: Sequence[tuple[int, int]], idf: Sequence[float], width: int) -> float:
    """The highest bm25 of any window of ``width`` characters that starts at an occurrence (every
    window is as long as any other, so bm25's length normalisation is 1). One pass: the window's end
    moves forward as its start does, and its score changes by each occurrence that enters or leaves,
    so a row costs its occurrences, not occurrences times query words."""
    counts = [0] * len(idf)
    score = best = 0.0
    end = 0
    for pos, leaving in found:
        while end < len(found) and found[end][0] <= pos + width:
            word = found[end][1]
            score += idf[word] * (_saturated(counts[word] + 1) - _saturated(counts[word]))
            counts[word] += 1
            end += 1
        best = max(best, score)
        score -= idf[leaving] * (_saturated(counts[leaving]) - _saturated(counts[leaving] - 1))
        counts[leaving] -= 1
    return best


def where(texts: Mapping[int, str], words: Sequence[str]) -> dict[int, list[tuple[int, int]]]:
    """Each row's occurrences of ``words`` (``rescore``'s input), by memory id."""
    return {rid: _occurrences(text[:MAX_TEXT_CHARS].lower(), words) for rid, text in texts.items()}


def rescore(
    hits: Sequence[tuple[int, float]], found: Mapping[int, Sequence[tuple[int, int]]], words: Sequence[str]
) -> list[tuple[int, float]]:
    """``hits`` (id, index score; best first) scored again: bm25 of ``words`` in each row's best window
    (``found``: each row's occurrences, from ``where``), their idf from the list, plus ``INDEX_SHARE`` of
    the index score; best first (ties: the index's order). A hit with no occurrences read keeps only its
    share of the index score."""
    if not hits or not words:
        return list(hits)
    listed = {rid: found.get(rid, ()) for rid, _ in hits}
    n = len(hits)
    held = [0] * len(words)
    for occurrences in listed.values():
        for word in {word for _, word in occurrences}:
            held[word] += 1
    idf = list_idf(held, n)
    width = WINDOW_WORDS * CHARS_PER_WORD
    scored = [
        (_best_window(listed[rid], idf, width) + INDEX_SHARE * raw, order, rid)
        for order, (rid, raw) in enumerate(hits)
    ]
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [(rid, score) for score, _, rid in scored]
