"""Whose words a question asks about (retrieval/role.py): the user's own, or what the assistant said."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cpersona.retrieval import fusion
from cpersona.retrieval.candidates import Key, ScoredRow
from cpersona.retrieval.role import (
    FACTOR,
    SPEAKER_FACTOR,
    asked_role,
    label,
    named_speaker,
    prefer_role,
    prefer_speaker,
    row_role,
    row_speaker,
)


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


def test_a_reminder_or_a_look_back_at_our_chat_that_names_no_side_leaves_both_sides_alone() -> None:
    rows = [
        _row(1, 1.0, "assistant: Let it proof 90 minutes at room temperature."),
        _row(2, 0.8, "user: bread?"),
    ]
    for question in (
        "Remind me how long to let the dough proof?",
        "Can you remind me where I should eat in Cork?",
        "I'm going back to our previous chat: how long should my dough proof?",
        "In our last conversation I asked about proofing; how long was it?",
    ):
        # Still a question about one side: the speaker and reply rules stay off.
        assert asked_role(question) == "user"
        assert [r.score for r in prefer_role(rows, question, 0.3)] == [1.0, 0.8]
    assert all(not r.factors for r in rows)
    # Saying whose words it wants, it is the role rule's again.
    ranked = prefer_role(rows, "Remind me what you said about proofing?", 0.3)
    assert ranked[1].factors == {FACTOR: pytest.approx(0.7)} and int(ranked[1].row["id"]) == 2


def test_a_rows_speaker_is_its_role_else_its_labels_name() -> None:
    assert row_speaker({"content": "[8 May 2023] Caroline: I went to a support group"}) == "caroline"
    assert row_speaker({"content": "Jon Smith: the deploy is done"}) == "jon smith"
    assert row_speaker({"content": "メラニー：絵を描いた"}) == "メラニー"
    assert row_speaker({"content": "user: I moved in May"}) == "user"
    assert row_speaker({"content": "x", "source": {"type": "assistant", "name": "Caroline"}}) == "assistant"
    assert row_speaker({"content": "The deploy runbook lives in ops/deploy.md"}) is None
    assert label("[8 May 2023] Caroline: hi") == ("Caroline", len("[8 May 2023] Caroline: "))
    assert label("no label here") is None


@pytest.mark.parametrize(
    ("question", "named"),
    [
        ("What did Caroline research?", "caroline"),
        ("What is Caroline's identity?", "caroline"),
        ("When did Melanie’s kids go camping?", "melanie"),
        ("What do Caroline and Melanie both like?", None),  # both named: nothing to prefer
        ("What did Jon do after work?", "jon smith"),  # one word of a two-word label
        ("what did caroline research?", None),  # a name is written with a capital
        ("When is the deploy?", None),
        ("メラニーはいつ絵を描いた？", "メラニー"),  # a script without case or spaces
        ("Did the user move?", None),  # roles are not names
    ],
)
def test_a_query_names_one_speaker_or_none(question: str, named: str | None) -> None:
    assert named_speaker(question, {"caroline", "melanie", "jon smith", "メラニー", "user"}) == named


def test_a_question_naming_a_speaker_puts_their_turns_above_the_others() -> None:
    rows = [
        _row(1, 1.0, "[8 May 2023] Melanie: Caroline, your painting of the lake is lovely!"),
        _row(2, 0.9, "[8 May 2023] Caroline: I painted the lake at sunrise last week."),
        _row(3, 0.8, "A note about painting, with no speaker"),
        _row(4, 0.75, "user: a turn with a role"),
        _row(5, 0.7, "[8 May 2023] Caroline: summary", kind="episode"),
    ]
    ranked = prefer_speaker(rows, "What did Caroline paint?", 0.2)
    assert [int(r.row["id"]) for r in ranked] == [2, 3, 1, 4, 5]
    assert ranked[2].factors == {SPEAKER_FACTOR: pytest.approx(0.8)}
    assert math.isclose(ranked[2].score, 0.8)
    assert all(SPEAKER_FACTOR not in r.factors for r in ranked if int(r.row["id"]) != 1)


def test_no_speaker_named_several_named_or_weight_zero_changes_nothing() -> None:
    rows = [_row(1, 1.0, "Melanie: the lake"), _row(2, 0.9, "Caroline: the lake at sunrise")]
    assert prefer_speaker(rows, "Who painted the lake?", 0.2) is rows
    assert prefer_speaker(rows, "Did Caroline or Melanie paint the lake?", 0.2) is rows
    assert prefer_speaker(rows, "What did Caroline paint?", 0.0) is rows
    assert prefer_speaker(rows, "What did Gina paint?", 0.2) is rows  # not a speaker of these rows
    assert prefer_speaker(rows, "What did I tell Caroline about the lake?", 0.2) is rows  # the role rule's
    assert [int(r.row["id"]) for r in rows] == [1, 2]
    assert all(not r.factors for r in rows)


@settings(max_examples=200, deadline=None)
@given(query=st.text(max_size=80), labels=st.lists(st.text(min_size=1, max_size=12), max_size=4))
def test_any_query_and_labels_scale_only_other_speakers_rows(query: str, labels: list[str]) -> None:
    rows = [_row(n, 1.0 - n / 10, f"{name}: a turn") for n, name in enumerate(labels)]
    rows.append(_row(9, 0.05, "a fact with no speaker"))
    before = {int(r.row["id"]): r.score for r in rows}
    ranked = prefer_speaker(rows, query, 0.2)
    assert sorted(int(r.row["id"]) for r in ranked) == sorted(before)
    for r in ranked:
        factor = r.factors.get(SPEAKER_FACTOR)
        assert factor is None or factor == pytest.approx(0.8)
        assert r.score == pytest.approx(before[int(r.row["id"])] * (factor or 1.0))
    named = named_speaker(query, {s for r in ranked if (s := row_speaker(r.row)) is not None})
    acts = named is not None and asked_role(query) is None
    for r in ranked:
        other = row_speaker(r.row) not in (None, named, "user", "assistant")
        assert (SPEAKER_FACTOR in r.factors) == (acts and other)
