"""The words for people: the sentence of an empty or shortened recall, the gate and search lines."""

from __future__ import annotations

from cpersona.retrieval.explain import describe_factors, describe_gate, describe_search, explain

CALIBRATED = {
    "kind": "calibrated",
    "level": "balanced",
    "beta": 1.0,
    "threshold": 0.391,
    "top_cosine": 0.301,
    "keyed_on": "top_cosine",
}


def test_an_empty_answer_names_the_gate_its_threshold_the_best_similarity_and_what_to_try() -> None:
    said = explain({**CALIBRATED, "passed": False, "cut": 12}, 0, 10)
    assert said is not None
    for part in ("calibrated balanced gate", "0.391", "0.301", "Try other words", "lenient"):
        assert part in said, said
    lenient = explain({**CALIBRATED, "level": "lenient", "passed": False, "cut": 3}, 0, 10)
    assert lenient is not None and "lenient precision" not in lenient
    heuristic = explain(
        {"kind": "heuristic", "threshold": 0.15, "top_cosine": 0.09, "passed": False, "cut": 2}, 0, 10
    )
    assert (
        heuristic is not None and "uncalibrated gate (threshold 0.150)" in heuristic and "0.090" in heuristic
    )


def test_a_shortened_answer_says_what_was_cut() -> None:
    exact = explain({**CALIBRATED, "passed": False, "cut": 9}, 1, 10)
    assert exact is not None and exact.startswith("Only 1 exact match(es) returned") and "other 9" in exact
    fallback = explain({**CALIBRATED, "keyed_on": "confidence", "passed": False, "cut": 0}, 4, 10)
    assert fallback is not None and "gate_fallback" in fallback
    per_row = explain({**CALIBRATED, "keyed_on": "confidence", "passed": True, "cut": 5}, 5, 10)
    assert per_row is not None and "5 row(s) whose confidence was below" in per_row
    trimmed = explain({**CALIBRATED, "passed": True, "cut": 0, "autocut": 4}, 3, 10)
    assert trimmed is not None and "autocut" in trimmed


def test_nothing_to_explain_for_a_full_answer_or_limit_zero() -> None:
    assert explain({**CALIBRATED, "passed": True, "cut": 0}, 10, 10) is None
    assert explain({**CALIBRATED, "passed": True, "cut": 0}, 3, 10) is None  # fewer rows exist: not cut
    assert explain({"kind": "off", "threshold": None, "passed": True}, 0, 0) is None


def test_empty_answers_without_a_cut() -> None:
    keyword = explain({"kind": "off", "reason": "the embedding model is loading"}, 0, 10, keyword_only=True)
    assert keyword is not None and "keyword-only (the embedding model is loading)" in keyword
    nothing = explain({**CALIBRATED, "passed": True, "cut": 0, "top_cosine": 0.52}, 0, 10)
    assert (
        nothing is not None and "matched the query by keyword or meaning (best similarity 0.520)" in nothing
    )
    assert "holds no memories" in (explain({"kind": "off"}, 0, 10, empty_query=True) or "")


def test_gate_search_and_factors_in_words() -> None:
    line = describe_gate({**CALIBRATED, "passed": True, "cut": 0})
    assert line == (
        "The calibrated balanced gate, threshold 0.391 on the query's best similarity: best similarity 0.301, passed."
    )
    assert describe_gate({"kind": "off", "threshold": None, "reason": "limit 0: nothing to gate"}) == (
        "No gate: limit 0: nothing to gate."
    )
    search = describe_search(
        {"vector": True, "keyword": "fts", "keyword_channels": {"fts_memories": "fts", "fts_words": "none"}},
        "rsf",
    )
    assert search == "Search: meaning (vector), trigram keyword (fts), fused by rsf."
    assert describe_factors({"score": 1.4, "factors": {"rsf": 2.0, "recent_recall_penalty": 0.7}}) == (
        "rsf 2 × recent_recall_penalty 0.7 = 1.4"
    )
    assert describe_factors({"score": 0.5, "factors": {"rrf": 0.5}}) == "rrf 0.5"
