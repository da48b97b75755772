"""The gate's and calibration's pure parts: thresholds on synthetic populations, exact matches, autocut."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cpersona.errors import InvalidInput
from cpersona.retrieval import calibration as cal
from cpersona.retrieval import confidence, fusion
from cpersona.retrieval.gate import (
    ExactMatcher,
    GateEvidence,
    GatePolicy,
    QualityGate,
    autocut,
    exact_match,
    identifier_tokens,
)
from cpersona.retrieval.match_query import MAX_TERMS
from cpersona.retrieval.pipeline import RecallRequest, ScoredRow
from cpersona.storage.scope import Scope


def unit(rng: np.random.Generator, n: int, dim: int = 64) -> np.ndarray:
    v = rng.normal(size=(n, dim))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def synthetic_corpus(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Sessions of 4 rows around one topic each: adjacent rows are close, random pairs are not."""
    rng = np.random.default_rng(seed)
    topics = unit(rng, 150)
    rows, sessions = [], []
    for s, topic in enumerate(topics):
        for _ in range(4):
            v = topic + 0.35 * unit(rng, 1)[0]
            rows.append(v / np.linalg.norm(v))
            sessions.append(s)
    return np.array(rows), np.array(sessions)


def test_separation_puts_the_threshold_between_the_two_populations() -> None:
    vectors, sessions = synthetic_corpus()
    pairs = cal.row_pairs(vectors, sessions, 2000)
    assert pairs.positive_source == "adjacent"
    # Random pairs land in one session 0.5% of the time: the bulk of each population is what counts.
    null_hi = float(np.percentile(pairs.null, 98))
    pos_lo = float(np.percentile(pairs.positives, 2))
    assert null_hi < pos_lo  # the synthetic populations are separated
    for level in cal.LEVELS:
        t = pairs.threshold("separation", cal.BETA[level], level)
        assert null_hi <= t <= pos_lo + 1e-9, (level, t, null_hi, pos_lo)
    # Percentile and z-score cut the null: above its bulk.
    assert pairs.threshold("percentile", 1.0, "balanced") == pytest.approx(np.percentile(pairs.null, 95))
    assert pairs.threshold("zscore", 1.0, "balanced", z_factor=2.0) == pytest.approx(
        pairs.null.mean() + 2 * pairs.null.std()
    )


def test_separation_weighs_specificity_by_beta() -> None:
    rng = np.random.default_rng(1)
    null = np.sort(rng.normal(0.2, 0.1, 3000))
    positives = np.sort(rng.normal(0.5, 0.1, 3000))  # overlapping: β moves the cut
    cuts = [cal.separation_threshold(null, positives, cal.BETA[level]) for level in cal.LEVELS]
    assert cuts[0] > cuts[1] > cuts[2]  # strict > balanced > lenient
    assert 0.2 < cuts[1] < 0.5


def test_too_few_adjacent_pairs_fall_back_to_nearest_neighbours() -> None:
    vectors, _ = synthetic_corpus()
    pairs = cal.row_pairs(vectors, np.arange(len(vectors)), 500)  # every row its own session
    assert pairs.positive_source == "nearest" and pairs.positives.mean() > pairs.null.mean()


def test_gate_thresholds_order_strict_balanced_lenient() -> None:
    tops = np.linspace(0.1, 0.5, 80)
    cuts = [cal.gate_threshold(tops, "separation", cal.BETA[level], level) for level in cal.LEVELS]
    assert cuts == sorted(cuts, reverse=True) and cuts[0] > cuts[2]
    assert cuts[1] == pytest.approx(np.percentile(tops, 90))
    assert cal.gate_threshold(tops, "percentile", 1.0, "balanced", percentile=10) == pytest.approx(
        np.percentile(tops, 10)
    )
    assert cal.gate_threshold(tops, "zscore", 1.0, "balanced", z_factor=0) == pytest.approx(tops.mean())


@given(st.floats(min_value=0.05, max_value=20))
def test_beta_maps_monotonically_onto_the_probe_percentile(beta: float) -> None:
    q = cal.gate_percentile(beta)
    assert 1 <= q <= 99
    assert cal.gate_percentile(beta * 1.5) >= q
    assert cal.level_for_beta(beta) in cal.LEVELS


@pytest.mark.parametrize("bad", [0, -1, 100, float("nan"), True, "2"])
def test_bad_beta_is_refused(bad: Any) -> None:
    with pytest.raises(InvalidInput):
        cal.validate_beta(bad)


def test_the_probe_set_ships_with_the_package() -> None:
    probes = cal.probe_questions()
    assert 60 <= len(probes) <= 100 and all(p.endswith("?") for p in probes)
    assert (
        cal.gate_percentile(2.0) == 95 and cal.gate_percentile(1.0) == 90 and cal.gate_percentile(0.5) == 75
    )


@pytest.mark.parametrize(
    ("query", "text", "expected"),
    [
        ("what does ERR_PAY_4021 mean", "ERR_PAY_4021: the issuer declined", True),
        ("deploy v2.4.1 today?", "we shipped v2.4.1 on Monday", True),
        ("who owns fooBar", "the fooBar service belongs to Ana", True),
        ("staging database port", "The staging database port is 5433", True),  # whole query
        ("what does the cat eat", "the dog eats kibble", False),
        ("ERR_PAY_4021", "ERR_PAY_4022 is different", False),
    ],
)
def test_exact_match(query: str, text: str, expected: bool) -> None:
    assert exact_match(query, text) is expected


def _exact_match_reference(query: str, text: str) -> bool:
    """The rule as first written (query parts recomputed per row): ExactMatcher must agree with it."""
    lowered = " ".join(text.split()).lower()
    whole = " ".join(query.split()).lower()
    if len(whole) >= 3 and whole in lowered:
        return True
    return any(token.lower() in lowered for token in identifier_tokens(query))


_GATE_TEXT = st.text(alphabet=st.sampled_from(list("aAbBzZ019 _./:#@-\t\n\"'İıßẞ")), max_size=30)


@given(_GATE_TEXT, st.lists(_GATE_TEXT, max_size=6))
def test_one_matcher_per_query_agrees_with_the_rule_on_every_row(query: str, texts: list[str]) -> None:
    matches = ExactMatcher(query)
    for text in [*texts, query, query.upper(), f"x {query} y"]:
        assert matches(text) is _exact_match_reference(query, text) is exact_match(query, text)


def test_exact_match_tests_at_most_max_terms_distinct_identifier_tokens() -> None:
    """Issue 17 defect 3: every candidate row was searched for each of up to 2,000 query tokens; the
    rule now bounds them like the keyword channels do (the first MAX_TERMS distinct, in query order)."""
    tokens = [f"id{i}x" for i in range(MAX_TERMS + 10)]
    matches = ExactMatcher(" ".join(tokens + tokens))
    assert matches.tokens == [t.lower() for t in tokens[:MAX_TERMS]]
    assert matches(f"row holding {tokens[MAX_TERMS - 1]}") is True
    assert matches(f"row holding {tokens[MAX_TERMS]}") is False


def test_identifier_tokens() -> None:
    assert identifier_tokens("is ERR_PAY_4021, v2.4 or fooBar ok? a-b x1 Plain") == [
        "ERR_PAY_4021",
        "v2.4",
        "fooBar",
        "a-b",
    ]


def test_autocut_keeps_at_least_the_minimum_and_cuts_only_a_standing_out_gap() -> None:
    assert autocut([0.9, 0.88, 0.86, 0.5, 0.49, 0.48], 3) == 3
    assert autocut([0.9, 0.5, 0.49, 0.48], 3) == 4 or autocut([0.9, 0.5, 0.49, 0.48], 3) == 3
    assert autocut([0.9, 0.5, 0.49, 0.48], 3) >= 3  # never below the minimum
    assert autocut([0.9, 0.89, 0.88, 0.87, 0.86], 3) == 5  # no gap stands out
    assert autocut([0.9, 0.2], 3) == 2


def scored(
    ref: str, signal: str, score: float, cosine: float | None, channels: dict[str, float]
) -> ScoredRow:
    kind, rid = ref.split(":")
    fused = fusion.Fused(ref, score, signal, cosine=cosine, channels=dict(channels))
    row = {"type": "memory" if kind == "mem" else "episode", "id": int(rid), "content": f"row {rid}"}
    return ScoredRow(row=row, fused=fused, score=score)


def request(query: str = "anything at all") -> RecallRequest:
    return RecallRequest(scope=Scope("a"), query=query, limit=10)


def gate(threshold: float, min_results: int = 3) -> QualityGate:
    return QualityGate(lambda agent: GatePolicy("calibrated", "balanced", 1.0, threshold), min_results)


@pytest.mark.parametrize("signal", ["rrf", "rsf"])
def test_autocut_never_fires_on_rrf_or_rsf_scores(signal: str) -> None:
    values = [1.0, 0.99, 0.98, 0.97, 0.2, 0.1]  # a huge gap after the 4th row
    rows = [
        scored(f"mem:{i}", signal, v, 0.9 - i * 0.01, {"vector": v, "fts_memories": v})
        for i, v in enumerate(values, start=1)
    ]
    decision = gate(0.1).apply(rows, request(), GateEvidence(top_cosine=0.9))
    assert len(decision.rows) == len(values) and "autocut" not in decision.info
    assert all(r.similarity() is None for r in rows)


def test_autocut_fires_on_an_all_cosine_list() -> None:
    cosines = [0.9, 0.89, 0.88, 0.87, 0.3, 0.29]
    rows = [scored(f"mem:{i}", "rrf", 1 / (60 + i), c, {"vector": c}) for i, c in enumerate(cosines, start=1)]
    confidence.key_on_cosine(rows)
    assert all(r.signal() == "cosine" for r in rows)
    decision = gate(0.1).apply(rows, request(), GateEvidence(top_cosine=0.9))
    assert [r.row["id"] for r in decision.rows] == [1, 2, 3, 4] and decision.info["autocut"] == 2


def test_a_failing_query_keeps_only_exact_matches() -> None:
    rows = [
        scored("mem:1", "rrf", 0.03, 0.2, {"vector": 0.2}),
        scored("mem:2", "rrf", 0.02, 0.1, {"fts_memories": 3.0}),
    ]
    rows[1].row["content"] = "ticket ERR_PAY_4021 was closed"
    decision = gate(0.5).apply(rows, request("what is ERR_PAY_4021"), GateEvidence(top_cosine=0.2))
    assert decision.info["passed"] is False and decision.info["cut"] == 1
    assert [r.row["id"] for r in decision.rows] == [2] and decision.rows[0].match_reason()[
        "gate"
    ] == "exact_match"


def test_gate_fallback_only_under_confidence() -> None:
    def rows() -> list[ScoredRow]:
        return [
            scored("mem:1", "rrf", 0.03, 0.2, {"vector": 0.2}),
            scored("mem:2", "rrf", 0.02, 0.1, {"vector": 0.1, "fts_memories": 3.0}),
        ]

    off = gate(0.9).apply(rows(), request(), GateEvidence(top_cosine=0.2))
    assert off.rows == [] and off.info["keyed_on"] == "top_cosine"
    on = rows()
    for r in on:
        r.confidence = r.fused.cosine
        r.score = r.confidence or 0.0
    decision = gate(0.9).apply(on, request(), GateEvidence(top_cosine=0.2))
    assert decision.info["keyed_on"] == "confidence" and decision.info["passed"] is False
    assert [(r.row["id"], r.gate_fallback) for r in decision.rows] == [(2, True)]


def test_confidence_blend_is_on_the_cosine_scale_and_orders_as_documented() -> None:
    assert confidence.blend(0.8, 0, None, False, 0) == pytest.approx(0.8)
    assert confidence.blend(0.8, 1000, 24, False, 0) < confidence.blend(0.8, 1, 24, False, 0)
    assert confidence.blend(0.8, 0, None, True, 0) < confidence.blend(0.8, 0, None, False, 0)
    assert confidence.blend(0.8, 0, None, False, 20) > confidence.blend(0.8, 0, None, False, 0)
    assert (
        confidence.blend(-0.3, 0, None, False, 0) == 0.0
        and confidence.blend(0.99, 0, None, False, 100) <= 1.0
    )


def test_the_remembered_threshold_of_a_stored_entry_is_the_computed_one() -> None:
    """Recall reads its calibrated threshold through a memo (``stored_gate_threshold``): whatever the
    method and the stored values, it is ``gate_threshold``'s value, also for an unhashable override."""
    rng = np.random.default_rng(8)
    for k in range(12):
        probes = [float(v) for v in rng.uniform(0.1, 0.9, size=50 + k)]
        for method, percentile, z in (
            ("separation", None, None),
            ("percentile", 80.0, None),
            ("zscore", None, 1.5),
        ):
            for level in cal.LEVELS:
                want = cal.gate_threshold(
                    probes, method, cal.BETA[level], level, percentile=percentile, z_factor=z
                )
                for _ in range(2):  # computed, then remembered
                    got = cal.stored_gate_threshold(
                        probes, method, cal.BETA[level], level, percentile=percentile, z_factor=z
                    )
                    assert got == want
    probes = [0.2, 0.4, 0.6]
    # A hand-edited entry's list where a number belongs: not hashable, computed as it is.
    assert cal.stored_gate_threshold(
        probes, "separation", 1.0, "balanced", percentile=[1]
    ) == cal.gate_threshold(
        probes,
        "separation",
        1.0,
        "balanced",
        percentile=[1],  # type: ignore[arg-type]
    )


_pieces = st.sampled_from(
    ["ΑΣ", "σ", "ς", "İ", "Straße", "v2.1", "Foo_bar", "x", "ab", "the cat", "CAT", "é"]
)
_gaps = st.sampled_from([" ", "  ", "\t", "\n", " \u00a0", "", "\u3000"])
_texts = st.lists(st.tuples(_pieces, _gaps), max_size=8).map(lambda xs: "".join(p + g for p, g in xs))


@given(query=_texts, text=_texts)
def test_exact_matcher_agrees_with_the_rule_on_words_and_white_space(query: str, text: str) -> None:
    """ExactMatcher tests the lower-cased row first and normalises white space only when the query's
    longest word is there: final sigma, dotted I, NBSP and ideographic spaces must not change a verdict."""
    assert ExactMatcher(query)(text) is _exact_match_reference(query, text)
