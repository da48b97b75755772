"""The gate's evidence for one query: the best row's cosine plus its share of the query's rare words
(issue 19, point 7; docs/quality-gate.md "What it keys on").

A question another agent could have asked, with its people renamed to this agent's people, reaches a
high top cosine on the names alone: they are in most rows. What it lacks is a row about *its* topic.
So the evidence is taken per row, and a row must earn it twice over:

    evidence = max over rows r of  cosine(query, r) + WEIGHT · coverage(query, r)
    coverage(query, r) = Σ idf(t) over the query's words t found in r / Σ idf(t) over the query's words

The query's words are its content words (no English function words, at least 3 letters, lightly
stemmed) **without the names the corpus is full of** (``entities.corpus_entities``): a name that is
in every other row says nothing about whether this question is answered here. ``idf`` comes from the
agent's own rows (a ``Lexicon`` made at calibration: the document frequency of every word in at
least ``LEXICON_MIN_SHARE`` of the rows; rarer words weigh as if in one row). A word no row holds
weighs the most and is found nowhere, which is what a question about something else looks like.

Calibration measures the shipped probe questions the same way — each probe is run through the recall
pipeline and its candidates scored as a query's are (``gate.EvidenceRecorder``) — and the gate
threshold is a percentile of that distribution. No SQL, no model: callers pass cosines and texts.
"""

from __future__ import annotations

import bisect
import functools
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cpersona.retrieval.entities import corpus_entities, mask
from cpersona.retrieval.match_query import STOPWORDS, _stem

#: How much a row's coverage of the query's words adds to its cosine (chosen on LoCoMo 26 + 30 and
#: confirmed on 41; see docs/research/held-out-2026-12.md for the curve and the rotation). A stored
#: calibration keeps the weight its probes were measured with (``gate.weight``).
WEIGHT = 1.25
#: The evidence is taken over this many of the best fused candidates (a query's and a probe's alike):
#: the row that is both close and covering ranks high in fusion, which weighs both.
CANDIDATES = 30
#: Words in at least this share of the rows get their own document frequency in the lexicon ...
LEXICON_MIN_SHARE = 0.01
#: ... at most this many of them (the most frequent), so the stored form stays a few KB.
LEXICON_MAX_WORDS = 500
#: The lexicon is counted on at most this many rows (a random sample beyond): a share ≥ 1% is
#: estimated within ~15% from 5,000 rows, and calibration stays bounded at 100k rows.
LEXICON_SAMPLE = 5000
#: A query's words are its first MAX_WORDS content words of at most MAX_WORD_CHARS characters: an
#: 8,000-character query costs what an ordinary one does (longer tokens, e.g. CJK runs without
#: spaces, are left to the cosine).
MAX_WORDS = 48
MAX_WORD_CHARS = 64
#: The light stem's suffixes (match_query._SUFFIXES): a row word matches a query stem plus one of them.
_SUFFIX = r"(?:ing|ed|es|s|ly)?"

_WORD = re.compile(r"\w+", re.UNICODE)

#: Words that ask for a suggestion rather than name what it is about ("any podcast recommendations?",
#: "can you suggest a novel?"): the preference that answers such a question says what the user likes,
#: never "recommend", so counting them as uncovered words emptied those questions (issue 32, item 4).
REQUEST_WORDS = frozenset(
    _stem(w)
    for w in [
        "recommend",
        "recommends",
        "recommended",
        "recommending",
        "recommendation",
        "recommendations",
        "suggest",
        "suggests",
        "suggested",
        "suggesting",
        "suggestion",
        "suggestions",
        "idea",
        "ideas",
        "advice",
        "advise",
        "tip",
        "tips",
        "option",
        "options",
        "anything",
        "something",
        "please",
        "looking",
    ]
)


def words_of(text: str) -> set[str]:
    """A row's words as the lexicon counts them: lower-cased, lightly stemmed."""
    return {_stem(w) for w in _WORD.findall(text.lower())}


def query_words(query: str, entities: Iterable[str]) -> list[str]:
    """The query's content words with the corpus's names masked out (order kept, no duplicates)."""
    masked = mask(query, entities)
    out: dict[str, None] = {}
    for match in _WORD.finditer(masked.lower()):
        token = match.group()
        if token in STOPWORDS or not 3 <= len(token) <= MAX_WORD_CHARS:
            continue
        stem = _stem(token)
        if stem in REQUEST_WORDS:
            continue
        out[stem] = None
        if len(out) >= MAX_WORDS:
            break
    return list(out)


def word_pattern(word: str) -> re.Pattern[str]:
    """``word`` (lower case) as a whole word in lower-cased text, with one light-stem suffix. It starts
    with the literal, so the regex engine's fast literal search finds candidates; the caller checks
    that no word character comes before."""
    return re.compile(re.escape(word) + _SUFFIX + r"\b")


def _starts_word(text: str, at: int) -> bool:
    return at == 0 or not (text[at - 1].isalnum() or text[at - 1] == "_")


def rows_with_word(pattern: re.Pattern[str], joined: str, starts: Sequence[int]) -> set[int]:
    """Rows of ``joined`` (lower-cased texts joined by newlines; ``starts`` = each row's offset) that
    hold the pattern's word."""
    found = set()
    for match in pattern.finditer(joined):
        if _starts_word(joined, match.start()):
            found.add(bisect.bisect_right(starts, match.start()) - 1)
    return found


@dataclass(frozen=True)
class Lexicon:
    """What the evidence needs to know about one agent's corpus: its size, the document frequency of
    its common words, and the names it is full of."""

    rows: int
    frequent: dict[str, int] = field(default_factory=dict)
    entities: tuple[str, ...] = ()

    def idf(self, word: str) -> float:
        """bm25's idf, ln(1 + (N − n + 0.5) / (n + 0.5)); a word not in the lexicon counts as in one row."""
        n = min(self.frequent.get(word, 1), self.rows)
        return math.log(1.0 + (self.rows - n + 0.5) / (n + 0.5))

    def to_json(self) -> dict[str, Any]:
        """The stored form: the frequent words as one "word count word count …" string, so copying a
        calibration entry on every recall stays cheap."""
        packed = " ".join(f"{w} {n}" for w, n in self.frequent.items())
        return {"rows": self.rows, "entities": list(self.entities), "frequent": packed}

    @classmethod
    def from_json(cls, data: Any) -> Lexicon | None:
        """The stored form back (None when it is missing or malformed: the gate then keys on cosine)."""
        if not isinstance(data, dict):
            return None
        rows, frequent, entities = data.get("rows"), data.get("frequent"), data.get("entities")
        if not isinstance(rows, int) or isinstance(rows, bool) or rows < 1:
            return None
        if not isinstance(frequent, str) or not isinstance(entities, list):
            return None
        if not all(isinstance(e, str) for e in entities):
            return None
        return _parse(rows, tuple(entities), frequent)


@functools.lru_cache(maxsize=64)
def _parse(rows: int, entities: tuple[str, ...], packed: str) -> Lexicon | None:
    parts = packed.split()
    if len(parts) % 2:
        return None
    try:
        frequent = {parts[i]: int(parts[i + 1]) for i in range(0, len(parts), 2)}
    except ValueError:
        return None
    return Lexicon(rows, frequent, entities)


def build_lexicon(texts: Sequence[str], known_names: Iterable[str] = (), seed: int = 0) -> Lexicon:
    """The lexicon of one agent's rows (``known_names``: e.g. the rows' ``source.name`` values),
    counted on at most LEXICON_SAMPLE of them and scaled to the whole."""
    sample: Sequence[str] = texts
    if len(texts) > LEXICON_SAMPLE:
        picks = np.random.default_rng(seed).choice(len(texts), LEXICON_SAMPLE, replace=False)
        sample = [texts[int(i)] for i in np.sort(picks)]
    df: Counter[str] = Counter()
    for text in sample:
        df.update(words_of(text))
    scale = len(texts) / max(len(sample), 1)
    floor = max(2, math.ceil(LEXICON_MIN_SHARE * len(sample)))
    frequent = [(w, n) for w, n in df.items() if n >= floor and " " not in w]
    frequent.sort(key=lambda item: (-item[1], item[0]))
    return Lexicon(
        len(texts),
        {w: max(1, round(n * scale)) for w, n in frequent[:LEXICON_MAX_WORDS]},
        tuple(corpus_entities(sample, known_names)),
    )


@dataclass(frozen=True)
class QueryWords:
    """One query's words, their weights under a lexicon and the pattern that finds them."""

    words: tuple[str, ...]
    weights: tuple[float, ...]
    patterns: tuple[re.Pattern[str], ...]

    @classmethod
    def of(cls, query: str, lexicon: Lexicon) -> QueryWords:
        words = tuple(query_words(query, lexicon.entities))
        return cls(words, tuple(lexicon.idf(w) for w in words), tuple(word_pattern(w) for w in words))

    @property
    def total(self) -> float:
        return sum(self.weights)


def joined_lower(texts: Sequence[str]) -> tuple[str, list[int]]:
    """``texts`` lower-cased and joined by newlines, with each one's start offset."""
    starts, at = [], 0
    for text in texts:
        starts.append(at)
        at += len(text) + 1
    return "\n".join(t.lower().replace("\n", " ") for t in texts), starts


def coverages(terms: QueryWords, texts: Sequence[str]) -> np.ndarray:
    """Each text's coverage of ``terms`` (one search per query word over all texts joined)."""
    out = np.zeros(len(texts), dtype=np.float64)
    total = terms.total
    if total <= 0 or not texts:
        return out
    joined, starts = joined_lower(texts)
    for weight, pattern in zip(terms.weights, terms.patterns, strict=True):
        for row in rows_with_word(pattern, joined, starts):
            out[row] += weight / total
    return out


def query_evidence(
    query: str, lexicon: Lexicon, cosines: Sequence[float], texts: Sequence[str], weight: float = WEIGHT
) -> tuple[float, float]:
    """(evidence, the best row's coverage) over candidate rows (``cosines[i]`` belongs to ``texts[i]``)."""
    if not texts:
        return -math.inf, 0.0
    cover = coverages(QueryWords.of(query, lexicon), texts)
    values = np.asarray(cosines, dtype=np.float64) + weight * cover
    best = int(np.argmax(values))
    return float(values[best]), float(cover[best])
