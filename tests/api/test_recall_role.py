"""A question in the first person is answered by the user's own words (retrieval/role.py), both engines."""

from __future__ import annotations

import pytest
from pg_cluster import BOTH_ENGINES

from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.memory import Memory

pytestmark = BOTH_ENGINES

FILLER = (
    "user: Can you help me plan a birthday party for my sister?",
    "assistant: Sure! Start with a guest list and a budget.",
    "user: What should I cook tonight?",
    "assistant: A pasta with garlic is quick.",
    "user: We walked by the river on Sunday.",
    "assistant: A walk by the river sounds lovely.",
    "user: My old flat had a tiny kitchen.",
    "assistant: Small kitchens need clever storage.",
)
# Nearly the same words on both sides; the user's row is a little longer, so it ranks second by its words.
SAID = "the flat in Ljubljana by the river is home"
MINE = f"{SAID}, honestly"


def _best(out: dict) -> str:
    return str(out["results"][-1]["content"])


def _store(memory: Memory, agent: str, **sources: dict[str, str]) -> None:
    for text in FILLER:
        memory.store(agent, text)
    if sources:
        memory.store(agent, MINE, source=sources["user"])
        memory.store(agent, SAID, source=sources["assistant"])
    else:
        memory.store(agent, f"user: {MINE}")
        memory.store(agent, f"assistant: {SAID}")


def test_a_first_person_question_takes_the_users_words_and_one_about_the_assistants_theirs(
    memory: Memory,
) -> None:
    _store(memory, "chat")
    mine = memory.recall("chat", "Is my home the flat in Ljubljana by the river?", record=False)
    assert _best(mine) == f"user: {MINE}"
    demoted = next(r for r in mine["results"] if r["content"].startswith("assistant: the flat"))
    assert demoted["match_reason"]["factors"]["role"] == pytest.approx(0.7)
    said = memory.recall("chat", "Did you say the flat in Ljubljana by the river is home?", record=False)
    assert _best(said) == f"assistant: {SAID}"
    # A question that names neither side: ranked by its words alone, nothing is scaled.
    neither = memory.recall("chat", "the flat in Ljubljana by the river", record=False)
    assert _best(neither) == f"assistant: {SAID}"
    assert all("role" not in r["match_reason"]["factors"] for r in neither["results"])


def test_a_rows_source_type_is_its_role(memory: Memory) -> None:
    _store(memory, "hook", user={"type": "user", "name": "prompt hook"}, assistant={"type": "assistant"})
    out = memory.recall("hook", "Is my home the flat in Ljubljana by the river?", record=False)
    assert _best(out) == MINE


def test_weight_zero_turns_it_off(settings: Settings) -> None:
    with Memory(settings.with_overrides(role_weight=0.0), backend=NoEmbeddings()) as memory:
        _store(memory, "off")
        out = memory.recall("off", "Is my home the flat in Ljubljana by the river?", record=False)
    assert _best(out) == f"assistant: {SAID}"
