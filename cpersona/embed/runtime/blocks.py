"""Where a long text is cut into blocks, so every part of it is read by the model (docs/retrieval.md#long-records).

An embedding model reads only the first ``max_tokens`` tokens of a text (MiniLM: 256); the rest of a
long memory would be reachable by keyword only. A text longer than the window also gets one vector per
overlapping block of its text, each short enough for the model to read whole. The row's own vector
already reads the first window, so the block that starts at 0 is not stored: blocks are numbered from
1 in text order and cover the text from the end of the first block onwards (with the overlap).

Blocks are cut by characters, sized by an estimate of their tokens, so the split needs no tokenizer
and is the same whichever backend embeds (in process, a shared host, an HTTP endpoint): a CJK
character (no spaces, one or more word pieces each) counts one token, any other character
``1 / _CHARS_PER_TOKEN``. The estimate errs long: on LoCoMo English turns WordPiece averages ~4.3
characters per token, on Japanese ~1.1, and a block's budget is ``_BLOCK_SHARE`` of the window, so a
block is read whole (tests/api/test_long_records.py checks every block with the real tokenizer).
The overlap (a quarter of a block, ~2-3 sentences) keeps a fact that straddles a cut whole in one block.
Cuts fall on whitespace or after sentence punctuation when one is near, never inside a word.

A text of ``LEAD_MIN_CHARS`` or more also gets a **lead block** (index 0): its opening sentence alone.
A fact is often said in passing before a request about something else ("We went camping by the river
last weekend. Anyway, can you summarise this paper …"); read whole, the request outweighs it, and the
row's own vector no longer matches a question about the fact. The lead is the text up to the first
sentence end (``.``, ``!``, ``?``, ``。``, or a line break) that closes at least ``_LEAD_MIN_SENTENCE``
characters, when that end comes within ``LEAD_MAX_CHARS`` and before ``_LEAD_SHARE`` of the text (a
lead that is most of the text reads what the row's own vector reads). Only the opening sentence, not
every one: one block per sentence made the best of many cosines high by chance
(docs/research/sentence-blocks.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence

import numpy as np

#: Characters per token assumed for non-CJK text (English WordPiece measures ~4.3; lower errs long).
_CHARS_PER_TOKEN = 3.5
#: A block's estimated tokens as a share of the window (the rest is margin for the estimate).
_BLOCK_SHARE = 0.75
#: The overlap between consecutive blocks, as a share of a block.
_OVERLAP_SHARE = 0.25
#: At most this many blocks per memory (16,000 characters of English make ~24): a cap on store cost.
MAX_BLOCKS = 48
#: Tokens a model adds around every text (BERT's [CLS] and [SEP]).
_SPECIAL_TOKENS = 2
#: A cut moves back at most this share of a block to land on a boundary.
_BOUNDARY_SLACK = 0.2
#: Texts this long (characters) or longer get a lead block; chosen on our long histories' choose halves
#: (200, then 120: every half gained), confirmed on the others
#: (docs/research/recall-round-three/long-records.md#the-lead-block).
LEAD_MIN_CHARS = 120
#: A lead ends within this many characters, or there is none.
LEAD_MAX_CHARS = 300
#: A lead covers less than this share of its text.
_LEAD_SHARE = 0.6
#: A sentence end closes a lead only after this many characters (not "Hi." or "OK!").
_LEAD_MIN_SENTENCE = 20
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|[。！？]|\n")


def _token_costs(text: str) -> np.ndarray:
    """Estimated tokens of each character (CJK one each, anything else 1/_CHARS_PER_TOKEN)."""
    codes = np.frombuffer(text.encode("utf-32-le"), dtype="<u4")
    wide = (
        ((codes >= 0x3040) & (codes <= 0x30FF))  # kana
        | ((codes >= 0x3400) & (codes <= 0x9FFF))  # CJK ideographs
        | ((codes >= 0xAC00) & (codes <= 0xD7AF))  # hangul
        | ((codes >= 0xF900) & (codes <= 0xFAFF))
        | (codes >= 0x20000)
    )
    return np.where(wide, 1.0, 1.0 / _CHARS_PER_TOKEN)


def _boundary(text: str, cut: int, earliest: int) -> int:
    """``cut`` moved back to just after whitespace or sentence punctuation, not before ``earliest``."""
    for i in range(cut, earliest, -1):
        before = text[i - 1]
        if before.isspace() or before in ".!?。！？、,;:":
            return i
    return cut


def lead_end(text: str) -> int | None:
    """Where ``text``'s lead block ends (its opening sentence), or None when it has none."""
    if len(text) < LEAD_MIN_CHARS:
        return None
    for found in _SENTENCE_END.finditer(text, 0, LEAD_MAX_CHARS + 1):
        end = found.end()
        if end >= _LEAD_MIN_SENTENCE:
            return end if end <= LEAD_MAX_CHARS and end < _LEAD_SHARE * len(text) else None
    return None


def block_spans(text: str, window_tokens: int | None) -> list[tuple[int, int, int]]:
    """(index, start, end) character spans of the blocks of ``text``: its lead (index 0, ``lead_end``)
    and the blocks beyond the first window (index from 1); [] when it has neither, or the window is
    unknown."""
    if not window_tokens or window_tokens <= _SPECIAL_TOKENS or not text:
        return []
    end = lead_end(text)
    lead = [(0, 0, end)] if end is not None else []
    return lead + _window_spans(text, window_tokens)


def shortest_blocked(window_tokens: int) -> int:
    """The fewest characters a text with blocks can have: a lead's floor, or the window's tokens (a token
    is at least one character), whichever is lower. The back-fill sweep reads no shorter text."""
    return min(window_tokens, LEAD_MIN_CHARS)


def needs_blocks(text: str, window_tokens: int, held: int) -> bool:
    """Whether a memory that holds ``held`` blocks and no lead block must be embedded again with its
    blocks: it is due a lead, or due window blocks and holds none."""
    spans = block_spans(text, window_tokens)
    return bool(spans) and (spans[0][0] == 0 or held == 0)


def due_pages(
    read_page: Callable[[int], Sequence[tuple[int, str, int]]], window_tokens: int
) -> Iterator[list[int]]:
    """The ids of memories that must be embedded again with their blocks, page by page (``needs_blocks``).

    ``read_page(after_id)`` gives (id, text, blocks held) of memories holding no lead block, in id order
    after ``after_id`` ([] at the end); the back-fill sweep and the ``blocks`` health check both walk it."""
    after = 0
    while page := read_page(after):
        after = page[-1][0]
        yield [memory_id for memory_id, text, held in page if needs_blocks(text, window_tokens, held)]


def _window_spans(text: str, window_tokens: int) -> list[tuple[int, int, int]]:
    """The blocks beyond the first window (index from 1), or [] when the text fits the window."""
    readable = window_tokens - _SPECIAL_TOKENS
    costs = _token_costs(text)
    if float(costs.sum()) <= readable:
        return []
    budget = readable * _BLOCK_SHARE
    reach = np.cumsum(costs)  # reach[i]: estimated tokens of text[: i + 1]
    spans: list[tuple[int, int]] = []
    start, length = 0, len(text)
    while start < length and len(spans) <= MAX_BLOCKS:
        spent = float(reach[start - 1]) if start else 0.0
        end = int(np.searchsorted(reach, spent + budget, side="right"))
        end = max(end, start + 1)
        if end >= length:
            spans.append((start, length))
            break
        end = _boundary(text, end, start + int((end - start) * (1 - _BOUNDARY_SLACK)))
        spans.append((start, end))
        back = float(reach[end - 1]) - budget * _OVERLAP_SHARE
        next_start = int(np.searchsorted(reach, back, side="right"))
        next_start = _boundary(text, next_start, start + 1) if next_start > start + 1 else start + 1
        start = max(next_start, start + 1)
    return [(i, s, e) for i, (s, e) in enumerate(spans) if i > 0][:MAX_BLOCKS]
