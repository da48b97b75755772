"""Whose words a question asks about: the user's own, or what the assistant said.

A memory of a conversation holds both sides: "I moved to Ljubljana in May" (the user) and a long
answer about what to see in Ljubljana (the assistant). "Which city do I live in now?" is answered by
the user's own turn, yet the assistant's answer shares more of its words and meaning and ranks above
it. "How long did you say to let the dough proof?" is the other way round: the assistant's answer.

So a question in the first person ("I", "my", "me", …) that does not ask what the assistant said keeps
the user's rows where they are and multiplies the assistant's by ``1 - weight``; a question about the
assistant's words ("did you say", "you recommended", "according to you", "your answer", …) does the
same to the user's rows. A request to be reminded ("remind me …"), or a question that points back at
"our previous chat", changes nothing unless it says whose words it wants: either side may hold them.
A row's role is its ``source.type`` when that is "user" or "assistant" (the prompt hook stores
"user"), else a leading "user:" / "assistant:" label of its text, the way a transcript writes turns.
Rows of no known role (facts, summaries, a profile) and episodes are left alone; so is every row when
the question names neither side. Runs after the gate, like recency: it reorders what the gate kept,
never what it keeps. English only (no data to choose Japanese words on).

Between people the same holds for names: in a transcript whose turns open with who speaks ("[8 May
2023] Caroline: …"), a question that names exactly one of the speakers among the rows ("What did
Caroline research?") is answered by that speaker's own turns, so the turns of the other people are
multiplied by ``1 - speaker weight``. Rows with no speaker, turns labelled with a role, and every row
when the question names no speaker or several, or is the role rule's (first person, the assistant's
words), are left alone. Chosen on LoCoMo 26 and 30, confirmed on 41
(docs/research/recall-round-three/whose-words.md#whose-words-named-speakers).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

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
#: A request to be reminded, or a question that points back at the conversation itself, names no side by
#: itself ("remind me where I should eat in Lisbon", "I'm going back to our previous chat: …" may want the
#: user's words or the assistant's), so the role rule stands aside for it unless the question says whose
#: words it wants ("remind me what you recommended"). It still counts as a question about the
#: conversation's two sides for the rules that stand aside for those (speakers, replies).
_NO_SIDE = re.compile(
    r"\bremind me\b|\bour (?:previous|last|earlier|past|other) (?:conversation|chat|discussion|session)\b",
    re.IGNORECASE,
)
_LABEL = re.compile(r"\s*(user|assistant)\s*:", re.IGNORECASE)
#: The factor name of the speaker rule in ``match_reason.factors``.
SPEAKER_FACTOR = "speaker"
# A transcript's leading label: "[8 May 2023] Caroline: ", "user: ", "Jon Smith: ", "メラニー：". Not
# entities.py's label reader: that one finds the names a corpus is full of, so it takes Title-case words
# only ("Note: …" and roles are no names); here any speaker counts, roles and scripts without case included.
_SPEAKER_LABEL = re.compile(
    r"\s*(?:\[[^\]]{0,80}\]\s*)?([^\W\d_][\w'.-]{0,30}(?: [^\W\d_][\w'.-]{0,30})?)\s*(?::\s|：\s*)"
)
#: Characters of a row read for its label.
_LABEL_CHARS = 140
_QUERY_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_POSSESSIVE = re.compile(r"['’]s?$")


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
    and re-sort (best first); ``weight`` 0, a question that names neither role, or a reminder or a look
    back at the conversation that does not say whose words it wants (``_NO_SIDE``) changes nothing."""
    wanted = asked_role(query) if weight > 0 else None
    if wanted is None or (wanted == USER and _NO_SIDE.search(query)):
        return rows
    roles = (row_role(item.row) if item.row["type"] == "memory" else None for item in rows)
    other = [role is not None and role != wanted for role in roles]
    return _scale(rows, other, FACTOR, 1.0 - weight)


def _scale(rows: list[ScoredRow], which: list[bool], factor: str, value: float) -> list[ScoredRow]:
    """Multiply the rows ``which`` marks by ``value`` (recorded as ``factor``) and re-sort, best first."""
    for item, marked in zip(rows, which, strict=True):
        if marked:
            item.scale(factor, value)
    if any(which):
        rows.sort(key=lambda item: item.sort_key())
    return rows


def label(text: str) -> tuple[str, int] | None:
    """The leading speaker label of a stored turn's text, as written, and where its body starts; None
    when the text opens with no label (a fact, a note)."""
    found = _SPEAKER_LABEL.match(text[:_LABEL_CHARS])
    return (found.group(1), found.end()) if found else None


def row_speaker(row: dict[str, Any]) -> str | None:
    """Who said a stored turn: its role (``row_role``: ``source.type`` or a "user:" label), else the
    name of its leading label ("[8 May 2023] Caroline: …"), case-folded, else None (a fact, a note)."""
    said_by = row_role(row)
    if said_by is not None:
        return said_by
    found = label(str(row.get("content") or ""))
    return found[0].casefold() if found else None


def _query_names(query: str) -> tuple[frozenset[str], str]:
    """The words of ``query`` that can be names (not written in lower case), case-folded and without a
    possessive "'s"; and the query case-folded, for names in scripts without spaces."""
    words = (_POSSESSIVE.sub("", w) for w in _QUERY_WORD.findall(query) if not w[:1].islower())
    return frozenset(w.casefold() for w in words if w), query.casefold()


def _names(speaker: str, words: frozenset[str], folded: str) -> bool:
    """True when the query names ``speaker`` (case-folded): one of its words is a query word, or, in a
    script without case (Japanese), stands anywhere in the query."""
    return any(
        part in words or (part.upper() == part.lower() and part in folded)
        for part in speaker.split()
        if len(part) >= 2
    )


def named_speaker(query: str, speakers: set[str]) -> str | None:
    """The one speaker of ``speakers`` (case-folded names, roles excluded) that ``query`` names; None
    when it names none or several."""
    words, folded = _query_names(query)
    named = [s for s in speakers if s not in (USER, ASSISTANT) and _names(s, words, folded)]
    return named[0] if len(named) == 1 else None


def prefer_speaker(rows: list[ScoredRow], query: str, weight: float) -> list[ScoredRow]:
    """Multiply each memory row another person said than the one speaker ``query`` names by ``1 -
    weight`` and re-sort (best first); ``weight`` 0, a query naming no speaker or several of the rows'
    speakers, or one in the first person or about the assistant's words (the role rule's), changes
    nothing. Rows with a role or no speaker are left alone."""
    if weight <= 0 or asked_role(query) is not None:  # a question about the user's or assistant's words
        return rows
    said = {id(item): row_speaker(item.row) for item in rows if item.row["type"] == "memory"}
    wanted = named_speaker(query, {s for s in said.values() if s is not None})
    if wanted is None:
        return rows
    speakers = (said.get(id(item)) for item in rows)
    other = [s is not None and s not in (USER, ASSISTANT) and s != wanted for s in speakers]
    return _scale(rows, other, SPEAKER_FACTOR, 1.0 - weight)
