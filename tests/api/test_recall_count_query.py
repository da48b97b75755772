"""A question that counts reaches the statements it counts, through the real pipeline with MiniLM on
both engines (docs/retrieval.md#the-query-vector-of-a-count): its content's vector is blended in, so
"How many concerts have I been to?" no longer lands first on another question that counts. So does a
question that asks how much time passed between two events: other questions about durations no longer
stand between its two statements."""

from __future__ import annotations

from pathlib import Path

import pytest
from model_fixtures import with_minilm
from pg_cluster import BOTH_ENGINES

from cpersona.config import Settings
from cpersona.memory import Memory

pytestmark = [BOTH_ENGINES]

STATEMENT = "Went to a concert yesterday: an organ recital at the cathedral."
OTHERS = [
    "How many songs has the band recorded in total?",
    "How many pages are in all the books ever written?",
    "Write a symphony concert review.",
    "What is the largest ocean in the world?",
    "Just brought home a peace lily for the window in the living room.",
]
QUESTION = "How many concerts have I been to?"


EVENTS = [
    "Finally got my bike back from the repair shop after its full service.",
    "Adopted a little grey kitten from the shelter today.",
]
DURATIONS = [
    "How much time does it take to learn to play the piano?",
    "How long should I rest between sets at the gym?",
    "How much time passed between the fall of Rome and the printing press?",
    "Write a short poem about autumn leaves.",
    "What is the capital of Australia?",
    "How long after planting do tomatoes ripen?",
    "How much time should pass between two coats of paint?",
]
SPAN = "How much time passed between the tune-up of my two-wheeler and bringing the cat home?"


def _vector_channel(
    settings: Settings,
    models_dir: Path,
    share: float,
    rows: tuple[str, ...] = (STATEMENT, *OTHERS),
    question: str = QUESTION,
) -> tuple[list[str], dict, dict]:
    """The vector channel's hits for ``question`` over ``rows`` (contents, best first), its trace entry
    and the response's ``search``, at content ``share``."""
    with Memory(with_minilm(settings, models_dir, count_query_content=share)) as mem:
        assert mem.wait_until_ready(60)
        ids = {}
        for day, text in enumerate(rows, start=1):
            ids[f"mem:{mem.store('a', text, timestamp=f'2023-05-{day:02d}T10:00:00Z')['id']}"] = text
        mem.worker.drain()
        out = mem.recall("a", question, limit=10, record=False, trace=True)
        vector = out["trace"]["channels"]["vector"]
        return [ids[hit["ref"]] for hit in vector["hits"]], vector, out["search"]


@pytest.mark.slow
def test_the_statement_counted_outranks_another_question_that_counts(
    settings: Settings, minilm_models_dir: Path
) -> None:
    plain, plain_trace, plain_search = _vector_channel(settings, minilm_models_dir, 0.0)
    assert plain[0] == OTHERS[0] and "content" not in plain_trace  # the frame wins alone
    assert "keyword_weight" not in plain_search

    blended, trace, search = _vector_channel(settings, minilm_models_dir, 0.5)
    assert blended[0] == STATEMENT, blended
    assert trace["content"] == "concerts have I been to"  # the trace says what was searched
    assert search["keyword_weight"] == 0.5  # its words weigh less (CPERSONA_COUNT_KEYWORD_WEIGHT)


@pytest.mark.slow
def test_the_two_events_of_a_question_about_the_time_between_them_come_first(
    settings: Settings, minilm_models_dir: Path
) -> None:
    rows = (*EVENTS, *DURATIONS)
    plain, plain_trace, _ = _vector_channel(settings, minilm_models_dir, 0.0, rows, SPAN)
    assert set(plain[:2]) != set(EVENTS) and "content" not in plain_trace  # a duration question between

    blended, trace, search = _vector_channel(settings, minilm_models_dir, 0.5, rows, SPAN)
    assert set(blended[:2]) == set(EVENTS), blended
    assert trace["content"] == "passed between the tune-up of my two-wheeler and bringing the cat home"
    assert "keyword_weight" not in search  # an order question: its named events keep their words


def test_keyword_only_a_count_keeps_its_words_whole(settings: Settings) -> None:
    """No model: the question's words are all recall has, so they keep their full weight."""
    with Memory(settings) as mem:
        mem.store("a", STATEMENT)
        out = mem.recall("a", QUESTION, record=False, trace=True)
        assert out["search"]["vector"] is False
        assert "keyword_weight" not in out["search"]
        assert "content" not in out["trace"]["channels"].get("vector", {})
        assert [r["content"] for r in out["results"]] == [STATEMENT]
