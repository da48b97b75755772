"""The vector channel's form of a question that counts: what it counts, beside how it asks.

"How many books did I read to the end?" is answered by statements ("Finally got to the last page of
'The Salt Road' this morning") that never say "how many". An embedding model reads the counting frame
as much as the content, so the question lands near other questions that count ("How many pages are in
all the books ever written?") and the statements it counts fall below them. For a question that
counts or totals (``diversity.aggregates``) the query vector is therefore the blend of the question's
vector and the vector of its content, the question with the frame taken out ("books did I read to the
end"): the question's own vector keeps what the frame says about the subject, the content's pulls
toward the statements. Measured on the vector channel alone before it was
built, and chosen on the long histories' choose halves
(docs/research/recall-round-three/question-forms.md#the-query-vector-of-a-count). A question that asks how
far apart two events were ("how much time passed between the move and the wedding?",
``diversity.measures_interval``) is blended the same way: its frame says as little of the events.

Only the frame's words are taken out, in English; a question in another language, or one whose
content would be empty, keeps its one vector (no second embedding, no cost).

Such a question's own words are weak evidence as well: the statements it counts say "ran the Harvest
Half Marathon", not "races", and the rows that do share its words (an assistant's long answer about
running) crowd them out of the fused list. So when its content is blended in, and it does not ask the
order of events (whose named events the keywords find best: "how many days passed between the move and
the wedding?"), the memory keyword channels weigh ``CPERSONA_COUNT_KEYWORD_WEIGHT`` times their usual
weight in fusion (``keyword_share``).
"""

from __future__ import annotations

import re

import numpy as np

from cpersona.retrieval.diversity import aggregates, measures_interval, orders

#: The words that frame a count, a total or a span of time and say nothing of what is counted.
_FRAME = re.compile(
    r"\b(?:how many(?: times| different)?|how much time|how much|how often|how long|in total|altogether|"
    r"so far|to date|up to now|until now|overall|combined|in all|total)\b",
    re.IGNORECASE,
)
#: An auxiliary left at the start once the frame is gone ("[how many times] did I go …").
_LEADING_AUX = re.compile(r"^(?:did|do|does|have|has|had|am|is|are|was|were)\b\s*", re.IGNORECASE)
_SPACES = re.compile(r"\s+")
#: Fewest word characters the content must keep to be worth a vector of its own.
_MIN_CONTENT_CHARS = 3


def content_form(query: str) -> str | None:
    """``query`` without its counting frame, when it counts or totals, or asks how far apart two events
    were, and something else remains; None otherwise (then the question's vector is used alone)."""
    if not (aggregates(query) or measures_interval(query)):
        return None
    content = _SPACES.sub(" ", _FRAME.sub(" ", query)).strip(" ?!.,:;")
    content = _LEADING_AUX.sub("", content).strip()
    if content == query.strip(" ?!.,:;") or len(re.sub(r"\W", "", content)) < _MIN_CONTENT_CHARS:
        return None
    return content


def blend(question: np.ndarray, content: np.ndarray, share: float) -> np.ndarray:
    """The unit vector of ``(1 - share) * question + share * content`` (both unit vectors, so their
    cosines to a row blend in the same shares), as float32."""
    mixed = (1.0 - share) * np.asarray(question, dtype=np.float64) + share * np.asarray(
        content, dtype=np.float64
    )
    norm = float(np.linalg.norm(mixed))
    if norm == 0.0:  # opposite vectors at an equal share: nothing to point at, keep the question's
        return np.asarray(question, dtype=np.float32)
    return (mixed / norm).astype(np.float32)


def keyword_share(query: str, content: str | None, share: float) -> float:
    """The factor on the memory keyword channels' weight for ``query`` whose blended content is
    ``content``: ``share`` for a question that counts and does not order events, 1 otherwise."""
    if content is None or orders(query):
        return 1.0
    return share
