"""A stored turn that asks gives way to its reply (retrieval/replies.py), through recall, both engines."""

from __future__ import annotations

import pytest
from pg_cluster import BOTH_ENGINES

from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.memory import Memory

pytestmark = BOTH_ENGINES

WHEN = "2023-05-08T13:56:00Z"
FILLER = (
    "[8 May 2023] Caroline: I went to a support group yesterday and it was powerful.",
    "[8 May 2023] Melanie: I ran a charity race for mental health last Saturday.",
    "[8 May 2023] Caroline: I'm thinking of working in counseling next year.",
    "[8 May 2023] Melanie: My kids loved the pottery workshop we did together.",
)
ASKS = "[8 May 2023] Melanie: That's a lovely necklace, Caroline! What does the necklace symbolize for you?"
REPLY = "[8 May 2023] Caroline: It symbolizes love and faith; my grandma gave me the necklace in Sweden."
QUESTION = "What does Caroline's necklace symbolize?"


def _store(memory: Memory, agent: str) -> None:
    for text in (*FILLER, ASKS, REPLY):
        assert memory.store(agent, text, timestamp=WHEN)["result"] == "stored"


def _best(out: dict) -> str:
    return str(out["results"][-1]["content"])


def test_the_reply_comes_before_the_turn_that_asked(memory: Memory) -> None:
    _store(memory, "talk")
    out = memory.recall("talk", QUESTION, record=False)
    assert _best(out) == REPLY
    asked = next(r for r in out["results"] if r["content"] == ASKS)
    assert asked["match_reason"]["factors"]["asks"] == pytest.approx(0.5)
    # In the first person the role rule's ground: the turn that asked keeps its words' place.
    mine = memory.recall("talk", "What does my necklace symbolize?", record=False)
    assert _best(mine) == ASKS


def test_a_reply_stored_in_another_channel_is_not_the_reply(memory: Memory) -> None:
    for text in FILLER:
        memory.store("split", text, timestamp=WHEN)
    memory.store("split", ASKS, timestamp=WHEN, channel="a")
    memory.store("split", REPLY, timestamp=WHEN, channel="b")
    out = memory.recall("split", QUESTION, record=False)
    assert _best(out) == ASKS
    assert all("asks" not in r["match_reason"]["factors"] for r in out["results"])


def test_weight_zero_turns_it_off(settings: Settings) -> None:
    with Memory(settings.with_overrides(reply_weight=0.0), backend=NoEmbeddings()) as memory:
        _store(memory, "off")
        out = memory.recall("off", QUESTION, record=False)
    assert _best(out) == ASKS
