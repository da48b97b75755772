"""The query vector of a question that counts (retrieval/query_form.py): the frame out, the rest kept."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cpersona.retrieval.diversity import aggregates
from cpersona.retrieval.query_form import blend, content_form, keyword_share


@pytest.mark.parametrize(
    ("question", "content"),
    [
        ("How many books did I read to the end?", "books did I read to the end"),
        ("How many times did I go out to hear a band?", "I go out to hear a band"),
        ("How many plants did I get in total?", "plants did I get"),
        ("How much did I spend on coffee altogether?", "I spend on coffee"),
        ("How often did I bake for my neighbours?", "I bake for my neighbours"),
        ("HOW MANY concerts have I been to so far", "concerts have I been to"),
    ],
)
def test_a_question_that_counts_keeps_what_it_counts(question: str, content: str) -> None:
    assert content_form(question) == content


@pytest.mark.parametrize(
    "question",
    [
        "Where do I live now?",  # does not count
        "What did I bake for the office?",
        "How often does he run?",  # a habit, not a count (diversity.aggregates)
        "How many?",  # nothing left once the frame is out
        "How many in total?",
        "何回コンサートに行きましたか",  # counts, but the frame is not English: one vector, no cost
        "",
    ],
)
def test_other_questions_keep_their_one_vector(question: str) -> None:
    assert content_form(question) is None


def test_the_blend_is_a_unit_vector_in_the_given_shares() -> None:
    question = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    content = np.array([0.0, 1.0, 0.0], dtype=np.float32)
    mixed = blend(question, content, 0.5)
    assert mixed.dtype == np.float32
    assert np.isclose(np.linalg.norm(mixed), 1.0)
    assert np.allclose(mixed, [2**-0.5, 2**-0.5, 0.0])
    # A row's cosine to the blend is the blend of its cosines (before the norm): shares order them.
    leaning = blend(question, content, 0.8)
    assert leaning[1] > leaning[0]
    assert np.allclose(blend(question, content, 0.0), question)
    assert np.allclose(blend(question, content, 1.0), content)


def test_opposite_vectors_at_an_equal_share_keep_the_question() -> None:
    question = np.array([0.6, 0.8], dtype=np.float32)
    assert np.allclose(blend(question, -question, 0.5), question)


@given(st.text(max_size=300))
def test_any_text_gives_none_or_a_shorter_content(text: str) -> None:
    content = content_form("How many " + text)
    assert content is None or (content and len(content) < len("How many " + text))
    assert content_form(text) is None or aggregates(text)


@pytest.mark.parametrize(
    ("question", "content"),
    [
        (
            "How much time passed between the fire drill and the audit?",
            "passed between the fire drill and the audit",
        ),
        ("How long after the move did I start the new job?", "after the move did I start the new job"),
        ("How long was it between the recital and the trip?", "it between the recital and the trip"),
    ],
)
def test_a_question_about_how_far_apart_two_events_were_keeps_the_events(question: str, content: str) -> None:
    assert content_form(question) == content
    assert (
        keyword_share(question, content, 0.5) == 1.0
    )  # an order question: its named events keep their words


@pytest.mark.parametrize(
    "question",
    [
        "How long is the trail up Greyhorn Ridge?",  # a length, no second event
        "How much time should I set aside for the museum?",
        "How long have I been learning the cello?",
    ],
)
def test_a_duration_of_one_thing_keeps_its_one_vector(question: str) -> None:
    assert content_form(question) is None


def test_a_count_halves_its_keywords_an_order_question_keeps_them() -> None:
    count = "How many concerts have I been to?"
    assert keyword_share(count, content_form(count), 0.5) == 0.5
    order = "How many days passed between the move and the wedding?"
    assert content_form(order) is not None  # its vector still blends the content in
    assert keyword_share(order, content_form(order), 0.5) == 1.0
    assert keyword_share("Where do I live now?", None, 0.5) == 1.0
