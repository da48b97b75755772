"""A question naming one speaker is answered by that speaker's own turns (retrieval/role.py), both engines."""

from __future__ import annotations

import pytest
from pg_cluster import BOTH_ENGINES

from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.memory import Memory

pytestmark = BOTH_ENGINES

TURNS = (
    "[8 May 2023] Caroline: I went to the LGBTQ support group yesterday.",
    "[8 May 2023] Melanie: That sounds powerful! How did it go?",
    "[8 May 2023] Caroline: It was great, everyone was so kind.",
    "[8 May 2023] Melanie: I'm off to the beach with the kids this weekend.",
)
# Nearly the same words in both turns; Melanie's is a little shorter, so it ranks first by its words.
THEIRS = "[9 May 2023] Melanie: the lake at sunrise is what I painted"
MINE = "[9 May 2023] Caroline: the lake at sunrise is what I painted, honestly"


def _best(out: dict) -> str:
    return str(out["results"][-1]["content"])


def _store(memory: Memory, agent: str) -> None:
    for text in (*TURNS, MINE, THEIRS):
        memory.store(agent, text)


def test_a_question_naming_one_speaker_takes_their_turn(memory: Memory) -> None:
    _store(memory, "pair")
    unnamed = memory.recall("pair", "the lake at sunrise painted", record=False)
    assert _best(unnamed) == THEIRS  # by its words alone
    named = memory.recall("pair", "What did Caroline paint, the lake at sunrise?", record=False)
    assert _best(named) == MINE
    demoted = next(r for r in named["results"] if r["content"] == THEIRS)
    assert demoted["match_reason"]["factors"]["speaker"] == pytest.approx(0.8)
    both = memory.recall("pair", "Did Caroline or Melanie paint the lake at sunrise?", record=False)
    assert all("speaker" not in r["match_reason"]["factors"] for r in both["results"])


def test_weight_zero_turns_it_off(settings: Settings) -> None:
    with Memory(settings.with_overrides(speaker_weight=0.0), backend=NoEmbeddings()) as memory:
        _store(memory, "off")
        out = memory.recall("off", "What did Caroline paint, the lake at sunrise?", record=False)
    assert _best(out) == THEIRS
    assert all("speaker" not in r["match_reason"]["factors"] for r in out["results"])
