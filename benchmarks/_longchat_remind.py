"""The single-session questions asked as requests to be reminded ("Remind me how long to let the dough
proof?") or as a look back at the conversation ("I'm going back to our previous chat: how long …?"),
without saying whose words they want: ``benchmarks/_longchat_multi.py --remind assistant|user
[--remind-form remind|chat]`` rewords one kind, leaving every turn and every other question as it was
(so a stored history serves).

For the assistant's questions the cue of whose words goes ("did you say", "you recommended",
"according to you"); the user's get "Remind me, " or "I'm going back to our previous chat: " in front.
Invented for the benchmark, written for the role rule's cases of a question that names no side
(docs/research/recall-round-three/whose-words.md#whose-words-the-role-of-a-row).
"""

from __future__ import annotations

import re
from typing import Any

QUESTION_TYPES = {"assistant": "single-session-assistant", "user": "single-session-user"}

#: The assistant questions' forms (_longchat_facts.py) and their "remind me" wording.
_ASSISTANT_FORMS = [
    (r"^How long did you say (.+)\?$", r"Remind me how long \1?"),
    (r"^What timing did you give me for (.+)\?$", r"Remind me of the timing for \1?"),
    (r"^When did you say (.+) is free\?$", r"Remind me when \1 is free?"),
    (r"^What distance did you mention for (.+)\?$", r"Remind me of the distance for \1?"),
    (
        r"^Remind me, where did you say I should eat when I visit (.+)\?$",
        r"Remind me where I should eat when I visit \1?",
    ),
    (
        r"^Which day can I get into that museum in (.+) without paying, according to you\?$",
        r"Remind me which day I can get into that museum in \1 without paying?",
    ),
    (
        r"^What was the name of the place you recommended in (.+)\?$",
        r"Remind me of the name of the place in \1 from our previous chat?",
    ),
]  # fmt: skip


#: The same as a look back at the conversation.
_BACK = "I'm going back to our previous chat: "
_ASSISTANT_CHAT_FORMS = [
    (r"^How long did you say (.+)\?$", _BACK + r"how long \1?"),
    (r"^What timing did you give me for (.+)\?$", _BACK + r"what was the timing for \1?"),
    (r"^When did you say (.+) is free\?$", _BACK + r"when is \1 free?"),
    (r"^What distance did you mention for (.+)\?$", _BACK + r"what was the distance for \1?"),
    (
        r"^Remind me, where did you say I should eat when I visit (.+)\?$",
        _BACK + r"where should I eat when I visit \1?",
    ),
    (
        r"^Which day can I get into that museum in (.+) without paying, according to you\?$",
        _BACK + r"which day can I get into that museum in \1 without paying?",
    ),
    (
        r"^What was the name of the place you recommended in (.+)\?$",
        _BACK + r"what was the name of the place in \1?",
    ),
]  # fmt: skip
FORMS = ("remind", "chat")


def remind(question: str, side: str, form: str = "remind") -> str:
    """``question`` (of ``side``'s single-session type) as a request to be reminded (``form``
    "remind") or a look back at the conversation ("chat")."""
    if side == "user":
        return ("Remind me, " if form == "remind" else _BACK) + question[0].lower() + question[1:]
    for pattern, wording in _ASSISTANT_FORMS if form == "remind" else _ASSISTANT_CHAT_FORMS:
        reworded = re.sub(pattern, wording, question)
        if reworded != question:
            return reworded
    raise ValueError(f"no {form} form for {question!r}")


def reword(history: dict[str, Any], side: str, form: str = "remind") -> dict[str, Any]:
    """``history`` with its questions of ``side``'s single-session type asked in ``form``."""
    qtype = QUESTION_TYPES[side]
    for question in history["questions"]:
        if question["question_type"] == qtype:
            question["question"] = remind(question["question"], side, form)
    return history
