"""Session diversity through the real pipeline on both engines (docs/retrieval.md#after-fusion): a
question whose answer lies in several sessions (it counts, orders or compares) gets every session's
best row before any session's second; any other question keeps a crowded session's rows together."""

from __future__ import annotations

from pathlib import Path

import pytest
from model_fixtures import with_minilm
from pg_cluster import BOTH_ENGINES

from cpersona.config import Settings
from cpersona.memory import Memory

pytestmark = [BOTH_ENGINES, pytest.mark.slow]

#: One session that talks about the long flight at length, on one afternoon.
CROWDED = [
    ("The flight to Tokyo was 13 hours long, the longest flight I have taken.", "2024-03-02T14:00:00Z"),
    ("On the Tokyo flight I watched three films and the flight crew was kind.", "2024-03-02T14:05:00Z"),
    ("The Tokyo flight food was fine; a long flight needs good snacks.", "2024-03-02T14:10:00Z"),
    ("Next time on a long flight to Tokyo I will book an aisle seat.", "2024-03-02T14:15:00Z"),
]
#: Two other sessions, weeks apart, each with one statement about another flight.
OTHERS = [
    ("The flight to Chicago took about three hours.", "2024-04-10T09:00:00Z"),
    ("Our flight to Reykjavik was five hours.", "2024-05-20T18:00:00Z"),
]
#: Other days, other subjects: what a memory holds besides.
FILLER = [
    ("Bought a new rain jacket for the autumn walks.", "2024-01-05T10:00:00Z"),
    ("The sourdough starter finally doubled overnight.", "2024-01-20T10:00:00Z"),
    ("My sister's birthday dinner is on the twelfth.", "2024-02-08T10:00:00Z"),
    ("Renewed the car insurance, a little cheaper this year.", "2024-06-01T10:00:00Z"),
    ("Started reading a novel about a lighthouse keeper.", "2024-06-15T10:00:00Z"),
    ("The printer at work jams on double-sided pages.", "2024-07-01T10:00:00Z"),
]


#: Many more memories on other subjects, so that a question's candidates are a few of the rows.
SUBJECTS = [
    "the garden",
    "my sister",
    "the printer",
    "our budget",
    "the novel",
    "the bakery",
    "the gym",
    "a podcast",
]
NOTES = ["needs attention this week", "came up at dinner", "was on my mind again", "is going well lately"]
MANY = [
    f"Note {n}: {subject} {note}."
    for n, (subject, note) in enumerate(
        (subject, note) for subject in SUBJECTS for note in NOTES for _ in range(5)
    )
]


def _untimed_order() -> list[tuple[str, str | None]]:
    """The memories stored at once, without their times: the crowded session's rows one after another,
    each other flight tens of rows away, other subjects between."""
    crowded = [text for text, _ in CROWDED]
    texts = [*MANY[:50], *crowded, *MANY[50:100], OTHERS[0][0], *MANY[100:150], OTHERS[1][0], *MANY[150:]]
    return [(text, None) for text in texts]


def _ranked(settings: Settings, models_dir: Path, question: str, timed: bool = True) -> list[str]:
    """Contents, best first, with MiniLM on."""
    with Memory(with_minilm(settings, models_dir)) as mem:
        assert mem.wait_until_ready(60)
        for text, when in [*FILLER, *CROWDED, *OTHERS] if timed else _untimed_order():
            mem.store("a", text, timestamp=when)
        mem.worker.drain()
        results = mem.recall("a", question, limit=10, record=False)["results"]
    return [r["content"] for r in reversed(results)]


def _second_of_crowded_and_last_other(ranked: list[str]) -> tuple[int, int]:
    """Where the crowded session's second row stands, and where the last of the other sessions' rows."""
    crowded = [i for i, text in enumerate(ranked) if text in dict(CROWDED)]
    others = [ranked.index(text) for text, _ in OTHERS]
    return crowded[1], max(others)


@pytest.mark.parametrize(
    "question",
    [
        "Which flight was longer, the Tokyo flight or the Chicago flight?",  # compares
        "What was my longest flight?",  # compares
        "How many flights have I taken?",  # counts
    ],
)
def test_a_question_over_several_sessions_sees_each_sessions_best_row_first(
    settings: Settings, minilm_models_dir: Path, question: str
) -> None:
    second, last_other = _second_of_crowded_and_last_other(_ranked(settings, minilm_models_dir, question))
    assert last_other < second  # the crowded session's second row waits for the other sessions' best


def test_without_the_strong_rule_the_crowded_session_comes_first(
    settings: Settings, minilm_models_dir: Path
) -> None:
    ranked = _ranked(
        settings.with_overrides(aggregate_diversity=1.0), minilm_models_dir, "What was my longest flight?"
    )
    second, last_other = _second_of_crowded_and_last_other(ranked)
    assert second < last_other


def test_another_question_keeps_the_crowded_sessions_rows_together(
    settings: Settings, minilm_models_dir: Path
) -> None:
    ranked = _ranked(settings, minilm_models_dir, "What did I do on the long flight to Tokyo?")
    assert set(ranked[:4]) == {text for text, _ in CROWDED}


def test_stored_without_times_the_rows_stored_together_stand_for_a_session(
    settings: Settings, minilm_models_dir: Path
) -> None:
    """A harness or an import that stores a whole history at once, without times: the times make one
    session, so where the rows were stored tells the sessions apart for a question that counts."""
    question = "How many flights have I taken?"
    second, last_other = _second_of_crowded_and_last_other(
        _ranked(settings, minilm_models_dir, question, timed=False)
    )
    assert last_other < second
    plain = _ranked(
        settings.with_overrides(aggregate_diversity=1.0), minilm_models_dir, question, timed=False
    )
    second, last_other = _second_of_crowded_and_last_other(plain)
    assert second < last_other
