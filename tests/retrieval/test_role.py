"""Whose words a question asks about (retrieval/role.py): the user's own, or what the assistant said."""

from __future__ import annotations

import math
from typing import Any

import pytest

from cpersona.retrieval import fusion
from cpersona.retrieval.candidates import Key, ScoredRow
from cpersona.retrieval.role import FACTOR, asked_role, prefer_role, row_role


def _row(
    rid: int, score: float, content: str, source: dict[str, Any] | None = None, kind: str = "memory"
) -> ScoredRow:
    row = {"type": kind, "id": rid, "ref": f"mem:{rid}", "content": content, "source": source}
    fused = fusion.Fused(Key(kind, rid), score, "rsf", rsf=score)
    return ScoredRow(row=row, fused=fused, score=score)


@pytest.mark.parametrize(
    ("question", "role"),
    [
        ("Which city do I live in now?", "user"),
        ("Can you suggest a restaurant for me on Friday?", "user"),
        ("What's my current 5k personal best?", "user"),
        ("How long did you say to let the dough proof?", "assistant"),
        ("Remind me, where did you say I should eat in Cork?", "assistant"),
        ("Which day is the museum free, according to you?", "assistant"),
        ("What was the third tip in your answer about sleep?", "assistant"),
        ("What did Caroline research?", None),
        ("When was the deploy runbook last changed?", None),
    ],
)
def test_a_question_names_whose_words_answer_it(question: str, role: str | None) -> None:
    assert asked_role(question) == role


def test_a_rows_role_is_its_source_type_else_its_leading_label() -> None:
    assert row_role({"content": "anything", "source": {"type": "user", "name": "prompt hook"}}) == "user"
    assert row_role({"content": "user: I moved in May", "source": {"type": "Assistant"}}) == "assistant"
    assert row_role({"content": "  Assistant: Ljubljana has a castle"}) == "assistant"
    assert row_role({"content": "USER:hi"}) == "user"
    assert (
        row_role({"content": "The deploy runbook lives in ops/deploy.md", "source": {"type": "tool"}}) is None
    )
    assert row_role({"content": "[2023-05-08] Caroline: I went to a support group"}) is None
    assert row_role({"content": "a user: not a label at the start"}) is None


def test_a_first_person_question_puts_the_users_words_above_the_assistants() -> None:
    rows = [
        _row(1, 1.0, "assistant: Ljubljana is a lovely city to live in, with a castle and a river."),
        _row(2, 0.9, "user: We finally moved, I live in Ljubljana now."),
        _row(3, 0.8, "Ljubljana fact without a role"),
        _row(4, 0.85, "assistant: a summary", kind="episode"),
    ]
    ranked = prefer_role(rows, "Which city do I live in now?", 0.3)
    assert [int(r.row["id"]) for r in ranked] == [2, 4, 3, 1]
    assert ranked[-1].factors == {FACTOR: pytest.approx(0.7)}
    assert math.isclose(ranked[-1].score, 0.7)
    assert all(FACTOR not in r.factors for r in ranked[:3])  # the user's row, an episode, a fact


def test_a_question_about_the_assistants_words_puts_them_first() -> None:
    rows = [
        _row(1, 1.0, "user: how long should dough proof?"),
        _row(2, 0.8, "assistant: Let it proof 90 minutes."),
    ]
    ranked = prefer_role(rows, "How long did you say to let the dough proof?", 0.3)
    assert [int(r.row["id"]) for r in ranked] == [2, 1]


def test_no_role_asked_or_weight_zero_changes_nothing() -> None:
    rows = [_row(1, 1.0, "assistant: x"), _row(2, 0.5, "user: y")]
    assert prefer_role(rows, "What did Caroline research?", 0.3) is rows
    assert [r.score for r in prefer_role(rows, "What do I like?", 0.0)] == [1.0, 0.5]
    assert all(not r.factors for r in rows)
