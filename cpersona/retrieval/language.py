"""Which writing systems the active model reads, and how much of a query it can read.

An embedding model trained on English text (all-MiniLM-L6-v2) maps a Japanese question to a vector
that says little about its meaning: fused at full weight, the vector channel adds noise to the
keyword channels' ranking (measured: docs/retrieval.md "Languages the model does not read"). The
model registry says which languages each model reads (``languages`` in its manifest); a language is
read through its scripts. The vector channel's weight in fusion is the share of the query's letters
written in a script the model reads: 1.0 for an English question to an English model, 0.0 for a
Japanese one (the channel is then not run at all: the answer is the keyword-only ranking), between
for a mixed one ("Python のインストール"). For a mixed query the share is multiplied by the share the
model reads of the vector channel's best candidates (``candidates_share``): the Latin half of "v-for の
何属性" means nothing against Japanese paragraphs, and against English ones it keeps its weight.

Scripts are told apart by Unicode block, which is enough to separate the writing systems that
matter here (Latin, CJK, kana, Hangul, Cyrillic, …); digits, punctuation and symbols are no letters
and do not count.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from functools import lru_cache

#: Every script: what a manifest's ``languages = ["*"]`` (a multilingual model) reads.
ALL = "*"

#: The script(s) each language is written in (ISO 639-1 codes; extend as manifests need).
SCRIPTS_OF_LANGUAGE: dict[str, tuple[str, ...]] = {
    "en": ("latin",),
    "de": ("latin",),
    "fr": ("latin",),
    "es": ("latin",),
    "it": ("latin",),
    "pt": ("latin",),
    "nl": ("latin",),
    "pl": ("latin",),
    "tr": ("latin",),
    "vi": ("latin",),
    "id": ("latin",),
    "ja": ("han", "hiragana", "katakana"),
    "zh": ("han",),
    "ko": ("hangul", "han"),
    "ru": ("cyrillic",),
    "uk": ("cyrillic",),
    "el": ("greek",),
    "ar": ("arabic",),
    "he": ("hebrew",),
    "hi": ("devanagari",),
    "th": ("thai",),
}

# Unicode blocks by first code point (inclusive ranges), for the scripts above.
_RANGES: tuple[tuple[int, int, str], ...] = (
    (0x0041, 0x024F, "latin"),  # Basic Latin letters through Latin Extended-B
    (0x1E00, 0x1EFF, "latin"),  # Latin Extended Additional (Vietnamese)
    (0xFF21, 0xFF5A, "latin"),  # full-width Latin letters
    (0x0370, 0x03FF, "greek"),
    (0x0400, 0x052F, "cyrillic"),
    (0x0590, 0x05FF, "hebrew"),
    (0x0600, 0x06FF, "arabic"),
    (0x0900, 0x097F, "devanagari"),
    (0x0E00, 0x0E7F, "thai"),
    (0x1100, 0x11FF, "hangul"),
    (0x3040, 0x309F, "hiragana"),
    (0x30A0, 0x30FF, "katakana"),
    (0x31F0, 0x31FF, "katakana"),
    (0xFF66, 0xFF9F, "katakana"),  # half-width katakana
    (0x3400, 0x4DBF, "han"),
    (0x4E00, 0x9FFF, "han"),
    (0xF900, 0xFAFF, "han"),
    (0x20000, 0x2FA1F, "han"),
    (0xAC00, 0xD7AF, "hangul"),
)


#: Scripts written without spaces between words: a word-level index (FTS5 unicode61) holds whole runs of
#: them between punctuation, so it finds such text only by accident.
UNSPACED = frozenset({"han", "hiragana", "katakana", "thai"})


def spaced_share(text: str) -> float:
    """The share of ``text``'s letters in scripts written with spaces between words (1.0 without letters)."""
    letters = spaced = 0
    for char in text:
        name = script_of(char)
        if name is None:
            continue
        letters += 1
        spaced += name not in UNSPACED
    return 1.0 if letters == 0 else round(spaced / letters, 3)


@lru_cache(maxsize=4096)
def script_of(char: str) -> str | None:
    """The script of one letter (None for a non-letter: digits, punctuation, symbols, space)."""
    if not unicodedata.category(char).startswith("L") and char not in "々〆ー":
        return None
    point = ord(char)
    for low, high, name in _RANGES:
        if low <= point <= high:
            return name
    return "other"


def scripts_read(languages: Iterable[str] | None) -> frozenset[str] | None:
    """The scripts a model reads, from its manifest's ``languages`` (None: every script)."""
    if languages is None:
        return None
    names = [str(code).strip().lower() for code in languages]
    if not names or ALL in names:
        return None
    scripts: set[str] = set()
    for code in names:
        scripts.update(SCRIPTS_OF_LANGUAGE.get(code.split("-")[0], ()))
    return frozenset(scripts)


def readable_share(text: str, scripts: frozenset[str] | None) -> float:
    """The share of ``text``'s letters written in ``scripts`` (1.0 when every script is read or the
    text has no letters), rounded to 3 places so that equal queries fuse identically."""
    if scripts is None:
        return 1.0
    letters = read = 0
    for char in text:
        name = script_of(char)
        if name is None:
            continue
        letters += 1
        if name in scripts:
            read += 1
    return 1.0 if letters == 0 else round(read / letters, 3)


#: How much of each candidate ``candidates_share`` reads: a row's opening shows its language.
CANDIDATE_CHARS = 300
#: How many of the vector channel's best memories ``candidates_share`` reads.
CANDIDATES = 10


def candidates_share(texts: Iterable[str], scripts: frozenset[str] | None) -> float:
    """The mean readable share of ``texts``' openings (``CANDIDATE_CHARS`` each; 1.0 without texts): a
    query the model half reads ("v-for の 何 属性") compared with rows it does not read at all (Japanese
    paragraphs) is a comparison of noise, however much of the query is Latin."""
    shares = [readable_share(text[:CANDIDATE_CHARS], scripts) for text in texts]
    return 1.0 if not shares else round(sum(shares) / len(shares), 3)


def unread_scripts(text: str, scripts: frozenset[str] | None) -> list[str]:
    """The scripts of ``text`` the model does not read, most letters first (for the explanation)."""
    if scripts is None:
        return []
    counts: dict[str, int] = {}
    for char in text:
        name = script_of(char)
        if name is not None and name not in scripts:
            counts[name] = counts.get(name, 0) + 1
    return sorted(counts, key=lambda n: (-counts[n], n))
