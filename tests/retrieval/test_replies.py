"""A stored turn that asks gives way to its reply (retrieval/replies.py)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cpersona.retrieval import fusion
from cpersona.retrieval.candidates import Key, ScoredRow
from cpersona.retrieval.replies import (
    ADDRESSES,
    FACTOR,
    MAX_TEXT_CHARS,
    addresses,
    asks,
    is_question,
    prefer_replies,
)

WHEN = "2023-05-08T13:56:00.000000Z"


def _row(rid: int, score: float, content: str, **fields: Any) -> ScoredRow:
    row = {
        "type": "memory",
        "id": rid,
        "ref": f"mem:{rid}",
        "content": content,
        "agent_id": "talk",
        "project_id": None,
        "channel": None,
        "timestamp": WHEN,
        **fields,
    }
    fused = fusion.Fused(Key("memory", rid), score, "rsf", rsf=score)
    return ScoredRow(row=row, fused=fused, score=score)


@pytest.mark.parametrize(
    ("text", "asking"),
    [
        ("[8 May 2023] Melanie: That's lovely, Caroline! What does the necklace symbolize for you?", True),
        ("Melanie: What does it mean to you?", True),
        ("user: Where should we eat tonight?", True),
        ("What did you think of the film? ", True),
        ("メラニー：そのネックレスにはどんな意味があるの？", True),
        # News first, then a question: mostly not a question.
        (
            "[8 May 2023] Melanie: My son had an accident on our road trip, but he's okay now and we "
            "all got home safe after a long day. How was your week?",
            False,
        ),
        ("Caroline: It stands for love and faith.", False),
        ("Is it? It stands for love and faith.", False),
        ("", False),
        ("?" * (MAX_TEXT_CHARS + 1), False),
    ],
)
def test_a_row_asks_when_it_ends_with_a_question_and_is_mostly_one(text: str, asking: bool) -> None:
    assert asks(text) is asking


@given(st.text(max_size=300))
def test_any_text_is_read_without_error(text: str) -> None:
    assert asks(text) in (True, False)
    assert addresses(text) in (True, False)
    assert is_question(text) in (True, False)


@pytest.mark.parametrize(
    ("query", "question"),
    [
        ("What does Caroline's necklace symbolize?", True),
        ("when did Jon open his studio", True),
        ("Caroline's necklace means what?", True),
        ("ネックレスの意味は何ですか", True),
        ("pottery workshop", False),
        ("deploy runbook ops/deploy.md", False),
        ("whatever happened", False),
    ],
)
def test_only_a_query_put_as_a_question_is_one(query: str, question: bool) -> None:
    assert is_question(query) is question


ASKING = "[8 May 2023] Melanie: That's lovely! What does the necklace symbolize for you?"
REPLY = "[8 May 2023] Caroline: It stands for love and faith."


def _ids(rows: list[ScoredRow]) -> list[int]:
    return [int(item.row["id"]) for item in rows]


def test_the_asking_row_falls_below_its_reply() -> None:
    rows = [_row(7, 2.0, ASKING), _row(8, 1.5, REPLY), _row(3, 1.2, "Caroline: I like hiking.")]
    out = prefer_replies(rows, "What does Caroline's necklace symbolize?", 0.5)
    assert _ids(out) == [8, 3, 7]
    assert out[2].factors[FACTOR] == pytest.approx(0.5)
    assert out[2].score == pytest.approx(1.0)
    assert all(FACTOR not in item.factors for item in out[:2])


@pytest.mark.parametrize(
    ("reply", "query", "weight"),
    [
        (None, "What does Caroline's necklace symbolize?", 0.5),  # the reply is not a candidate
        ({"channel": "other"}, "What does Caroline's necklace symbolize?", 0.5),  # another channel
        ({"agent_id": "else"}, "What does Caroline's necklace symbolize?", 0.5),  # another agent
        ({"timestamp": "2023-05-09T13:56:00.000000Z"}, "What does Caroline's necklace symbolize?", 0.5),
        ({}, "What does my necklace symbolize?", 0.5),  # first person: the role rule's ground
        ({}, "What did you say the necklace symbolizes?", 0.5),  # the assistant's words
        ({}, "What does Caroline's necklace symbolize?", 0.0),  # off
        ({}, "Caroline necklace symbolize", 0.5),  # words to look up, not a question
        (  # the same speaker goes on: not a reply
            {"content": "[8 May 2023] Melanie: Also, I love the colour."},
            "What does Caroline's necklace mean?",
            0.5,
        ),
        # A next row that names no speaker (a fact, a note): not a reply.
        ({"content": "It stands for love and faith."}, "What does Caroline's necklace symbolize?", 0.5),
    ],
)
def test_nothing_moves_without_another_speakers_reply_in_the_session_or_for_whose_words(
    reply: dict[str, Any] | None, query: str, weight: float
) -> None:
    rows = [_row(7, 2.0, ASKING)]
    if reply is not None:
        fields = dict(reply)
        rows.append(_row(8, 1.5, fields.pop("content", REPLY), **fields))
    out = prefer_replies(rows, query, weight)
    assert _ids(out)[0] == 7
    assert all(FACTOR not in item.factors for item in out)


def test_a_fact_that_ends_with_a_question_names_no_speaker_and_stays() -> None:
    rows = [_row(7, 2.0, "Which forms apply to the tax estimate?"), _row(8, 1.5, REPLY)]
    assert _ids(prefer_replies(rows, "Which forms apply to the tax estimate?", 0.5)) == [7, 8]


def test_roles_name_the_speakers_of_a_users_history() -> None:
    rows = [
        _row(7, 2.0, "Where should we eat tonight?", source={"type": "user"}),
        _row(8, 1.5, "Try the noodle bar on Grove Street.", source={"type": "assistant"}),
    ]
    assert _ids(prefer_replies(rows, "Which restaurant was suggested for tonight?", 0.5)) == [8, 7]


def test_the_turn_before_is_not_a_reply() -> None:
    # "I" in it: the asking row does not only speak to the other, so only the rule for asking applies.
    rows = [
        _row(8, 2.0, "[8 May 2023] Melanie: I love it! What does it symbolize for you?"),
        _row(7, 1.5, REPLY),
    ]
    assert _ids(prefer_replies(rows, "What does Caroline's necklace symbolize?", 0.5)) == [8, 7]


def test_episodes_are_left_alone() -> None:
    episode = _row(7, 2.0, ASKING)
    episode.row["type"] = "episode"
    rows = [episode, _row(8, 1.5, REPLY)]
    assert _ids(prefer_replies(rows, "What does Caroline's necklace symbolize?", 0.5)) == [7, 8]


@pytest.mark.parametrize(
    ("text", "speaking_to"),
    [
        ("[25 May 2023] Caroline: That charity race sounds great, Mel! So proud of you!", True),
        ("Jon: Congrats on the fashion editors reaching out, your hard work pays off.", True),
        ("Caroline: That race sounds great, I'm proud of you!", False),  # "I'm": her own words too
        ("Melanie: I ran a charity race for mental health last Saturday.", False),
        ("Melanie: The race raised money for mental health.", False),
    ],
)
def test_a_turn_speaks_to_the_other_person_when_it_says_you_and_never_i(text: str, speaking_to: bool) -> None:
    assert addresses(text) is speaking_to


TOLD = "[25 May 2023] Melanie: I ran a charity race for mental health last Saturday."
REACTED = "[25 May 2023] Caroline: That charity race for mental health sounds great, Mel! So proud of you!"


def test_a_reaction_gives_way_to_what_it_reacts_to() -> None:
    rows = [_row(5, 2.0, REACTED), _row(4, 1.5, TOLD)]
    out = prefer_replies(rows, "When did Melanie run a charity race?", 0.5)
    assert _ids(out) == [4, 5]
    assert out[1].factors == {ADDRESSES: pytest.approx(0.5)}


@pytest.mark.parametrize(
    ("told", "reacted"),
    [
        (
            "user: I ran a charity race last Saturday.",
            "assistant: That race sounds great, your effort counts!",
        ),
        (TOLD, "[25 May 2023] Melanie: And your race sounds great too!"),  # the same speaker
        ("I ran a charity race last Saturday.", REACTED),  # a note that names no speaker
    ],
)
def test_only_a_turn_between_people_after_another_speaker_gives_way(told: str, reacted: str) -> None:
    rows = [_row(5, 2.0, reacted), _row(4, 1.5, told)]
    assert _ids(prefer_replies(rows, "When did Melanie run a charity race?", 0.5)) == [5, 4]
