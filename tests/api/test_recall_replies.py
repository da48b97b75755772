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
    # The question names Caroline: the speaker rule (tests/api/test_recall_speaker.py) would put her
    # reply first on its own, so it is off too.
    off = settings.with_overrides(reply_weight=0.0, speaker_weight=0.0)
    with Memory(off, backend=NoEmbeddings()) as memory:
        _store(memory, "off")
        out = memory.recall("off", QUESTION, record=False)
    assert _best(out) == ASKS


TOLD = (
    "[25 May 2023] Melanie: Hey Caroline, since we last chatted a lot has happened to me. I ran a charity "
    "race for mental health last Saturday; it made me think about taking care of myself."
)
REACTED = "[25 May 2023] Caroline: That charity race for mental health sounds great, Mel! So proud of you!"
RACE = "When did Melanie run a charity race for mental health?"


def _race(memory: Memory) -> dict:
    for text in (*(t for t in FILLER if "charity" not in t), TOLD, REACTED):
        memory.store("race", text, timestamp=WHEN)
    return memory.recall("race", RACE, record=False)


def test_a_reaction_gives_way_to_the_news_it_reacts_to(memory: Memory) -> None:
    out = _race(memory)
    assert _best(out) == TOLD
    reacted = next(r for r in out["results"] if r["content"] == REACTED)
    assert reacted["match_reason"]["factors"]["addresses"] == pytest.approx(0.5)


def test_by_its_words_alone_the_reaction_comes_first(settings: Settings) -> None:
    # The question names Melanie, who told the news: the speaker rule is off too.
    off = settings.with_overrides(reply_weight=0.0, speaker_weight=0.0)
    with Memory(off, backend=NoEmbeddings()) as memory:
        assert _best(_race(memory)) == REACTED
