"""Turning free text into engine-neutral search terms (``QueryTerms``).

A query is split into word tokens; the storage engine turns the terms into
its own full-text syntax (for SQLite, quoted FTS5 phrases OR'ed: see
``cpersona.storage.sqlite.keyword``), so no query text reaches it as syntax. Trigram FTS matches
substrings, which we exploit twice: English words are cut to a light stem
("painting" → "paint" also finds "painted"), and CJK runs, which have no
spaces, are split into overlapping 3-character pieces so a long Japanese
question still finds the rows sharing part of it. The word-level index gets the
same content words whole: its porter tokenizer stems them ("running" ~ "runs"),
which the substring stem cannot.

Identifiers keep their inner hyphens and dots ("v-for", "CVE-2024-3094", "Vue.js", "6.3.0"), whole
and unstemmed, beside their parts: the trigram index holds the punctuation, so the whole term finds
the row that names the identifier exactly, where its parts alone ("v", "for") found nothing or every
row. A token that mixes scripts ("2016年以降", "F-15戦闘機") is cut where the script changes, as a
reader would: the Latin or digit run stays one term, the CJK run gives trigrams, so "2016" is not
diluted into "201" and "016" (docs/retrieval.md#query-building-match_querypy-then-storagesqlitekeywordpy).

Every term is bounded as well as their number (docs/input-rules.md): trigram FTS turns a term of n
characters into a phrase of n - 2 trigrams, and one 8,000-character token cost seconds and hundreds
of MB per recall (issue 17). A longer term is cut to its first ``MAX_TERM_CHARS`` characters for the
substring channels (trigram MATCH, LIKE), whose prefix still finds every row the whole term did.
The word index looks a word up whole in its term tree (no cost that grows with its length), and a cut
word would be another word there: it gets words of up to ``MAX_WORD_CHARS`` whole, none longer.
"""

from __future__ import annotations

import re

from cpersona.storage.interface import QueryTerms

MAX_TERMS = 48  # a 100 KB query must not become a 100 KB MATCH expression
#: Longest term (characters) any keyword channel gets; LoCoMo's longest question word has 15.
MAX_TERM_CHARS = 32
#: Longest word the word index gets (whole; a SHA-512 in hex has 128). It only bounds the MATCH text.
MAX_WORD_CHARS = 128
#: Characters of trigram (and of LIKE) terms per query: a phrase's cost grows with its trigrams, so
#: this bounds a query's phrase work to about an ordinary long question's (48 words of ~5 characters);
#: LoCoMo's questions use at most 57.
MAX_QUERY_TERM_CHARS = 256
_TOKEN = re.compile(r"\w+", re.UNICODE)
#: A token with its inner hyphens and dots ("v-for", "cve-2024-3094", "vue.js"): an identifier.
_IDENTIFIER = re.compile(r"\w+(?:[-.]\w+)*", re.UNICODE)
#: Character-class ranges, one per script: hiragana and katakana; kanji (Han, with extension A and the
#: compatibility ideographs); katakana alone; Hangul syllables.
KANA_CLASS = "\u3040-\u30ff"
KANJI_CLASS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
KATAKANA_CLASS = "\u30a0-\u30ff"
HANGUL_CLASS = "\uac00-\ud7af"
CJK_CLASS = KANA_CLASS + KANJI_CLASS + HANGUL_CLASS
_CJK = re.compile(f"[{CJK_CLASS}]")
#: Runs of one script inside a token: CJK characters, or anything else.
_SCRIPT_RUNS = re.compile(f"[{CJK_CLASS}]+|[^{CJK_CLASS}]+")
_SUFFIXES = ("ing", "ed", "es", "s", "ly")

# Function words that match nearly every row and only dilute bm25 on English text.
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
    ]
)


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _cjk_pieces(token: str) -> list[str]:
    if len(token) <= 3:
        return [token]
    return [token[i : i + 3] for i in range(len(token) - 2)]


def _tokens(query: str) -> list[str]:
    """Word tokens in query order; an identifier ("v-for") whole, then its parts ("v", "for")."""
    out: list[str] = []
    for token in _IDENTIFIER.findall(query):
        out.append(token)
        if "-" in token or "." in token:
            out.extend(_TOKEN.findall(token))
    return out


def _substring_pieces(token: str) -> list[str]:
    """The trigram-index terms of one token: each script run on its own, CJK runs as trigrams, other
    runs whole (stemmed when they are plain words, as they are when an identifier)."""
    pieces: list[str] = []
    for run in _SCRIPT_RUNS.findall(token) if _CJK.search(token) else [token]:
        if _CJK.search(run):
            pieces.extend(_cjk_pieces(run))
        else:
            run = run.strip("-.")
            pieces.append(run if "-" in run or "." in run else _stem(run))
    return pieces


class _Terms:
    """Distinct terms in query order, until ``MAX_TERMS`` of them or ``MAX_QUERY_TERM_CHARS`` in all."""

    __slots__ = ("chars", "refused", "terms")

    def __init__(self) -> None:
        self.terms: dict[str, None] = {}
        self.chars = 0
        self.refused = False  # a term did not fit the character budget: take no more

    @property
    def full(self) -> bool:
        return self.refused or len(self.terms) >= MAX_TERMS

    def add(self, term: str) -> None:
        if self.full or term in self.terms:
            return
        if self.chars + len(term) > MAX_QUERY_TERM_CHARS:
            self.refused = True
            return
        self.terms[term] = None
        self.chars += len(term)


def query_terms(query: str) -> QueryTerms:
    """Split ``query`` into trigram MATCH terms, LIKE terms and word-index terms (deduplicated, order kept).

    Each group holds at most ``MAX_TERMS`` terms, of at most ``MAX_TERM_CHARS`` characters
    (``MAX_WORD_CHARS`` for the word index); the trigram and LIKE terms at most
    ``MAX_QUERY_TERM_CHARS`` characters in all, whatever the query. Building them is linear in the
    query's length (dicts, not list scans, dedupe).
    """
    tokens = [t.lower() for t in _tokens(query)]
    content = [t for t in tokens if t not in STOPWORDS] or tokens
    match, like = _Terms(), _Terms()
    words = tuple(w for w in dict.fromkeys(content) if len(w) <= MAX_WORD_CHARS)[:MAX_TERMS]
    for token in content:
        for piece in _substring_pieces(token):
            if len(piece) >= 3:
                match.add(piece[:MAX_TERM_CHARS])
        like.add(token[:MAX_TERM_CHARS])
        if match.full:
            break
    return QueryTerms(tuple(match.terms), tuple(like.terms), words)
