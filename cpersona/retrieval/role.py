"""Whose words a question asks about: the user's own, or what the assistant said.

A memory of a conversation holds both sides: "I moved to Ljubljana in May" (the user) and a long
answer about what to see in Ljubljana (the assistant). "Which city do I live in now?" is answered by
the user's own turn, yet the assistant's answer shares more of its words and meaning and ranks above
it. "How long did you say to let the dough proof?" is the other way round: the assistant's answer.

So a question in the first person ("I", "my", "me", …) that does not ask what the assistant said keeps
the user's rows where they are and multiplies the assistant's by ``1 - weight``; a question about the
assistant's words ("did you say", "you recommended", "according to you", "your answer", …) does the
same to the user's rows. A row's role is its ``source.type`` when that is "user" or "assistant" (the
prompt hook stores "user"), else a leading "user:" / "assistant:" label of its text, the way a
transcript writes turns. Rows of no known role (facts, summaries, a profile) and episodes are left
alone; so is every row when the question names neither side. Runs after the gate, like recency: it
reorders what the gate kept, never what it keeps. English only (no data to choose Japanese words on).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cpersona.retrieval.candidates import ScoredRow

#: The factor name in ``match_reason.factors``.
FACTOR = "role"
USER = "user"
ASSISTANT = "assistant"

#: First-person words (the user speaking of themselves; replies.py reads them too).
FIRST_PERSON = re.compile(r"\b(?:i|my|me|mine|myself|i'm|i've|i'd|i'll)\b", re.IGNORECASE)
_ASSISTANT_SAID = re.compile(
    r"\byou (?:said|told|mentioned|recommended|suggested|gave|listed|wrote|shared|provided|explained|"
    r"described|offered|came up with)\b|\bdid you\b|\baccording to you\b|"
    r"\byour (?:answer|reply|response|suggestion|recommendation|list|advice|explanation)\b",
    re.IGNORECASE,
)
_LABEL = re.compile(r"\s*(user|assistant)\s*:", re.IGNORECASE)


def asked_role(query: str) -> str | None:
    """The role whose words answer ``query``: "assistant" when it asks what the assistant said, "user"
    when it speaks in the first person otherwise, None when it names neither."""
    if _ASSISTANT_SAID.search(query):
        return ASSISTANT
    if FIRST_PERSON.search(query):
        return USER
    return None


def row_role(row: dict[str, object]) -> str | None:
    """A memory row's role: its ``source.type`` when "user" or "assistant", else its text's leading
    role label ("user: …"), else None."""
    source = row.get("source")
    kind = source.get("type") if isinstance(source, dict) else None
    if isinstance(kind, str) and kind.lower() in (USER, ASSISTANT):
        return kind.lower()
    label = _LABEL.match(str(row.get("content") or "")[:16])
    return label.group(1).lower() if label else None


def prefer_role(rows: list[ScoredRow], query: str, weight: float) -> list[ScoredRow]:
    """Multiply each memory row of the other role than the one ``query`` asks about by ``1 - weight``
    and re-sort (best first); ``weight`` 0, or a question that names neither role, changes nothing."""
    wanted = asked_role(query) if weight > 0 else None
    if wanted is None:
        return rows
    changed = False
    for item in rows:
        if item.row["type"] != "memory":
            continue
        role = row_role(item.row)
        if role is not None and role != wanted:
            item.scale(FACTOR, 1.0 - weight)
            changed = True
    if changed:
        rows.sort(key=lambda item: item.sort_key())
    return rows
