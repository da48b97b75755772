"""A question asked in a conversation gives way to its reply.

In a stored conversation the turn that asks ("Wow, that necklace is lovely! What does it symbolize
for you?") shares the words of a question about the subject as much as the turn that answers it
("It stands for love, faith and strength …"), and it often ranks first. Yet the asking turn holds
nothing the question wants to know; its reply does. So after the gate, a memory that mostly asks
(its text ends with a question, and question sentences are at least ``QUESTION_SHARE`` of it) is
multiplied by ``1 - weight`` when its reply is a candidate too. The reply is the memory stored right
after it (the next id) in the same agent, project and channel, within one session's gap
(``context.same_session``), said by someone else: the next turn of a transcript whose turns name who
speaks ("[8 May 2023] Caroline: …", "user: …", or ``source.type``). Facts and notes name no speaker
and never move. A turn that tells news and then asks ("My son had
an accident on our road trip, he's okay now. How was your week?") is mostly not a question and keeps
its place, as does a question whose reply was not found.

The same holds the other way round between people (turns labelled with names, not roles): a turn
that only speaks to the other person ("That charity race sounds great, Mel! So proud of you!": "you",
"your", and no "I", "my", "me") reacts to what the turn before it said, and gives way to it when both
are candidates (factor ``ADDRESSES``). Not between a user and an assistant: an assistant's answer
("You could try the noodle bar") speaks to the user and is the content itself.

Only a query put as a question moves anything: a lookup by words ("pottery workshop") wants the rows
that hold them, the asking row included. A question in the first person, or about what the assistant
said (``role.asked_role``), is left alone too: in a user's history with an assistant, the user's own
question ("I'm vegetarian, what should I cook tonight?") is often the very evidence such a question
wants, and there the role rule orders the two sides. Chosen on LoCoMo's conversations 26 and 30,
confirmed on 41 and on the long histories
(docs/research/recall-round-three/replies-and-context.md#a-question-gives-way-to-its-reply).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from cpersona.retrieval import role
from cpersona.retrieval.context import same_session

if TYPE_CHECKING:
    from cpersona.retrieval.candidates import ScoredRow

#: The factor names in ``match_reason.factors``: the row asks; the row only speaks to the other person.
FACTOR = "asks"
ADDRESSES = "addresses"
#: Question sentences' share of a row's text at least, for the row to count as asking (chosen on
#: LoCoMo 26 and 30 among 0.3 … 0.7).
QUESTION_SHARE = 0.4
#: Characters of a row read (a long record is not a conversational question).
MAX_TEXT_CHARS = 2_000

_SENTENCE = re.compile(r"[^.!?。！？]*[.!?。！？]+|[^.!?。！？]+$")
_ASKS = ("?", "？")
_ROLES = (role.USER, role.ASSISTANT)
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself|you're|you've|you'll|you'd)\b", re.IGNORECASE)
# A query that is a question: it ends with a question mark (or Japanese か), or opens with a question
# word. A lookup by words ("pottery workshop") wants the rows that hold them, the asking row included.
_QUESTION = re.compile(
    r"(?:[?？]|か[。]?)\s*$|^\s*(?:what|when|where|who|whom|whose|why|how|which|did|do|does|is|are|was|were|"
    r"has|have|had|can|could|would|will|should)\b",
    re.IGNORECASE,
)


def asks(text: str) -> bool:
    """True when ``text`` (less a transcript's leading label) ends with a question and question
    sentences make up at least ``QUESTION_SHARE`` of it."""
    # Most rows do not end with a question mark: that test comes first, before any regex.
    if len(text) > MAX_TEXT_CHARS or not text.rstrip().endswith(_ASKS):
        return False
    body = _body(text)
    asked = sum(len(s) for s in _SENTENCE.findall(body) if s.rstrip().endswith(_ASKS))
    return asked >= QUESTION_SHARE * len(body)


def _body(text: str) -> str:
    found = role.label(text)
    return (text[found[1] :] if found else text).strip()


def addresses(text: str) -> bool:
    """True when ``text`` (less its leading label) speaks to the other person only: "you" or "your",
    and no "I", "my" or "me"."""
    # Every second-person word holds "you": rows without it are passed over before any regex.
    if len(text) > MAX_TEXT_CHARS or "you" not in text.lower():
        return False
    body = _body(text)
    return bool(_SECOND_PERSON.search(body)) and not role.FIRST_PERSON.search(body)


class _Turns:
    """The memories among one recall's rows by id, and who said each (read once per row)."""

    def __init__(self, rows: list[ScoredRow]) -> None:
        self.by_id = {int(item.row["id"]): item.row for item in rows if item.row["type"] == "memory"}
        self._said: dict[int, str | None] = {}

    def said_by(self, row: dict[str, Any]) -> str | None:
        rid = int(row["id"])
        if rid not in self._said:
            self._said[rid] = role.row_speaker(row)
        return self._said[rid]

    def replies(self, earlier: dict[str, Any], later: dict[str, Any], between_people: bool = False) -> bool:
        """True when ``later`` answers ``earlier``: another speaker (with ``between_people``, both named
        by a label, not a role), the same session."""
        first, second = self.said_by(earlier), self.said_by(later)
        if first is None or second is None or first == second:
            return False
        if between_people and (first in _ROLES or second in _ROLES):
            return False
        return same_session(earlier, later)


def is_question(query: str) -> bool:
    """True when ``query`` is put as a question, not as words to look up."""
    return bool(_QUESTION.search(query))


def prefer_replies(rows: list[ScoredRow], query: str, weight: float) -> list[ScoredRow]:
    """Multiply each memory that mostly asks, and whose reply is among ``rows``, by ``1 - weight``; so
    too each turn between people that only speaks to the other, when the turn it answers is among
    ``rows``; re-sort (best first). ``weight`` 0, a query that is not a question, or a question in the
    first person or about the assistant's words changes nothing."""
    if weight <= 0 or not is_question(query) or role.asked_role(query) is not None:
        return rows
    turns = _Turns(rows)
    changed = False
    for item in rows:
        if item.row["type"] != "memory":
            continue
        # Cheapest first: a neighbour among the rows, then the text, then sessions and speakers.
        text = str(item.row.get("content") or "")
        rid = int(item.row["id"])
        later, earlier = turns.by_id.get(rid + 1), turns.by_id.get(rid - 1)
        if later is not None and asks(text) and turns.replies(item.row, later):
            item.scale(FACTOR, 1.0 - weight)
            changed = True
        if earlier is not None and addresses(text) and turns.replies(earlier, item.row, between_people=True):
            item.scale(ADDRESSES, 1.0 - weight)
            changed = True
    if changed:
        rows.sort(key=lambda item: item.sort_key())
    return rows
