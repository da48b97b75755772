"""The names an agent's corpus is full of, and a query with them masked (issue 19, point 7).

A question about someone else's life, with its people renamed to this agent's people, reaches a
high top cosine on the names alone: the speakers' names are in most rows. The gate should weigh the
part of the question that is not a name everyone shares. This module finds those names from the
corpus itself, label-free:

- **speaker labels**: the ``Name:`` that opens a row (after an optional ``[...]`` prefix, such as a
  date), one to three capitalised words, seen at the start of at least ``MIN_LABEL_ROWS`` rows;
- **frequent proper nouns**: a Title-case word written in the middle of a sentence in at least
  ``MIN_NAME_SHARE`` of the rows (and ``MIN_NAME_ROWS``) and almost never written in lower case (so not "The", not "Art"),
  which is how nicknames ("Mel") and the other people an agent talks about show up;
- names given by the caller (e.g. the rows' ``source.name``).

No model, no SQL: callers pass texts. English function words never count as names.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

from cpersona.retrieval.match_query import STOPWORDS

#: A label must open at least this many rows (and this share of them) to count.
MIN_LABEL_ROWS = 3
MIN_LABEL_SHARE = 0.01
#: A capitalised mid-sentence word must be in this share of rows, and in at least MIN_NAME_ROWS of
#: them, to count (in a small corpus one mention is not "full of").
MIN_NAME_SHARE = 0.02
MIN_NAME_ROWS = 5
#: ... and its lower-case form in at most this many rows per row it is capitalised in.
MAX_LOWER_RATIO = 0.05
#: At most this many names are kept (most frequent first): the mask stays small and cheap.
MAX_ENTITIES = 32

_PREFIX = re.compile(r"^\s*(?:\[[^\]\n]{0,80}\]\s*)?")
_LABEL = re.compile(r"([^\W\d_][\w'’.-]*(?:\s+[^\W\d_][\w'’.-]*){0,2})\s*:\s")
_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_SENTENCE_END = ".!?…"


def _starts_sentence(text: str, at: int) -> bool:
    """True when the word at ``at`` opens ``text`` or follows sentence-ending punctuation."""
    i = at - 1
    while i >= 0 and text[i].isspace():
        i -= 1
    return i < 0 or text[i] in _SENTENCE_END


def _body(text: str) -> tuple[str, list[str]]:
    """(text after any leading [...] prefix and speaker label, the label's words)."""
    rest = text[_PREFIX.match(text).end() :]  # type: ignore[union-attr]
    label = _LABEL.match(rest)
    if label and all(_title_case(word) for word in label.group(1).split()):
        return rest[label.end() :], label.group(1).split()
    return rest, []


def _base(word: str) -> str:
    """'Caroline's' → 'Caroline'."""
    for suffix in ("'s", "’s"):
        if word.endswith(suffix):
            return word[: -len(suffix)]
    return word.strip("'’-.")


def _title_case(word: str) -> bool:
    """'Caroline', 'McKenzie' yes; 'LGBTQ', 'iPhone', 'the' no (acronyms name things, not people)."""
    return word[0].isupper() and any(c.islower() for c in word[1:])


def corpus_entities(texts: Sequence[str], known: Iterable[str] = ()) -> list[str]:
    """The names ``texts`` are full of (speaker labels, frequent proper nouns) plus ``known``, most
    frequent first, at most MAX_ENTITIES."""
    n = len(texts)
    labels: Counter[str] = Counter()
    capital: Counter[str] = Counter()
    lower: Counter[str] = Counter()
    for text in texts:
        body, label = _body(text)
        labels.update(set(label))
        mid: set[str] = set()
        low: set[str] = set()
        for match in _WORD.finditer(body):
            word = _base(match.group())
            if len(word) < 2 or "'" in word or "’" in word:
                continue
            if _title_case(word):
                if not _starts_sentence(body, match.start()):
                    mid.add(word)
            elif word[0].islower():
                low.add(word)
        capital.update(mid)
        lower.update(low)
    scores: Counter[str] = Counter()
    for word, count in labels.items():
        if count >= MIN_LABEL_ROWS and count >= MIN_LABEL_SHARE * n:
            scores[word] = max(scores[word], count)
    for word, count in capital.items():
        frequent = count >= MIN_NAME_ROWS and count >= MIN_NAME_SHARE * n
        if frequent and lower[word.lower()] <= MAX_LOWER_RATIO * count:
            scores[word] = max(scores[word], count)
    for word in known:
        for part in _WORD.findall(word):
            if len(part) >= 2 and _title_case(part):
                scores[part] = max(scores[part], n + 1)
    names = [w for w in scores if w.lower() not in STOPWORDS]
    names.sort(key=lambda w: (-scores[w], w))
    return names[:MAX_ENTITIES]


def mask(query: str, entities: Iterable[str], replacement: str = "") -> str:
    """``query`` with every whole-word occurrence of an entity (and its possessive) replaced.

    With an empty replacement the word goes and the spaces close up; the rest of the question is
    left as written. Case-sensitive: names are written capitalised.
    """
    names = sorted({e for e in entities if e}, key=len, reverse=True)
    if not names:
        return query
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(n) for n in names) + r")(?:['’]s)?\b")
    if not pattern.search(query):
        return query
    out = pattern.sub(replacement, query)
    return re.sub(r"\s{2,}", " ", out).strip()


def mentions(query: str, entities: Iterable[str]) -> bool:
    """True when ``query`` names one of ``entities`` (whole word)."""
    return mask(query, entities, "\0") != query
