"""What the gate keys on: the corpus's names (entities.py), the lexicon and the evidence (evidence.py),
the stored gate state (calibration.gate_state / gate_inputs) and the gate keyed on evidence."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cpersona.retrieval import calibration as cal
from cpersona.retrieval import evidence as ev
from cpersona.retrieval import fusion
from cpersona.retrieval.entities import corpus_entities, mask, mentions
from cpersona.retrieval.gate import GateEvidence, GatePolicy, QualityGate
from cpersona.retrieval.pipeline import RecallRequest, ScoredRow
from cpersona.storage.scope import Scope

CHAT = [
    "[8 May, 2023] Caroline: Hey Mel! How was the pottery class?",
    "[8 May, 2023] Melanie: It was great, Caroline. I made a bowl.",
    "[8 May, 2023] Caroline: Wow! The kids must love it, Mel.",
    "[8 May, 2023] Melanie: They do. It was so relaxing after work.",
    "[9 July, 2023] Caroline: I went to the LGBTQ support group yesterday.",
    "[9 July, 2023] Melanie: That's brave of you, Caroline!",
    "[9 July, 2023] Caroline: Thanks Mel. It really helped me.",
    "[9 July, 2023] Melanie: Art helps me the same way. The art show is next week.",
    "[9 July, 2023] Caroline: I'd love to come, Mel.",
    "[9 July, 2023] Melanie: Great, I'll save you a seat.",
] * 3


# -- names ------------------------------------------------------------------------------------------
def test_speaker_labels_and_frequent_nicknames_are_the_corpus_names() -> None:
    names = corpus_entities(CHAT)
    assert names[:2] in (["Caroline", "Melanie"], ["Melanie", "Caroline"]) and "Mel" in names
    # not sentence starters, months in the date prefix, acronyms, or Title-case words also written lower case
    for word in ("Hey", "Wow", "Thanks", "That", "The", "May", "July", "LGBTQ", "Art", "Great", "I"):
        assert word not in names, word


def test_a_small_corpus_has_no_names_from_one_mention() -> None:
    facts = ["Ana prefers dark roast coffee from Kenya", "We moved staging to Postgres 16 in March"]
    assert corpus_entities(facts * 2) == []
    assert corpus_entities(facts, known=["Ana Lima"]) == ["Ana", "Lima"]


def test_mask_takes_whole_words_and_possessives() -> None:
    names = ["Maria", "John"]
    assert mask("What is Maria's favourite dish, John?", names) == "What is favourite dish, ?"
    assert mask("Did Marianne meet Johnny?", names) == "Did Marianne meet Johnny?"
    assert mentions("when did John run", names) and not mentions("when did Johnny run", names)
    assert mask("anything", []) == "anything"


@given(st.text(max_size=200), st.lists(st.text(min_size=1, max_size=12), max_size=5))
def test_mask_never_raises_and_never_grows(query: str, names: list[str]) -> None:
    out = mask(query, names)
    assert isinstance(out, str) and len(out) <= len(query)


# -- lexicon and evidence ---------------------------------------------------------------------------
def test_lexicon_weighs_common_words_low_and_round_trips() -> None:
    lexicon = ev.build_lexicon(CHAT)
    assert lexicon.rows == len(CHAT) and "Caroline" in lexicon.entities
    assert lexicon.idf("pottery") < lexicon.idf("submarine")  # in the corpus vs in no row at all
    assert lexicon.idf("it") < lexicon.idf("pottery")
    stored = lexicon.to_json()
    assert isinstance(stored["frequent"], str)  # one packed string: cheap to copy per recall
    assert ev.Lexicon.from_json(stored) == lexicon
    for bad in (None, [], {"rows": "3"}, {**stored, "frequent": "odd count words"}, {**stored, "rows": 0}):
        assert ev.Lexicon.from_json(bad) is None


def test_lexicon_counts_a_bounded_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ev, "LEXICON_SAMPLE", 20)
    big = CHAT * 10  # 300 rows, counted on 20 and scaled
    lexicon = ev.build_lexicon(big)
    assert lexicon.rows == 300
    assert 0 < lexicon.frequent["caroline"] <= 300


def test_query_words_drop_function_words_and_the_corpus_names() -> None:
    words = ev.query_words("When did Caroline go to the support groups?", ["Caroline"])
    assert words == ["support", "group"]  # "when", "did", "the" are function words; "go", "to" short


def test_word_matching_is_whole_word_with_the_light_stem() -> None:
    rows = ["I painted it", "she paints", "a repaint job", "the painter", "PAINT!"]
    joined, starts = ev.joined_lower(rows)
    assert ev.rows_with_word(ev.word_pattern("paint"), joined, starts) == {0, 1, 4}


def test_evidence_is_the_best_row_on_cosine_plus_coverage() -> None:
    lexicon = ev.build_lexicon(CHAT)
    query = "What did Melanie make at the pottery class?"
    rows = [
        "[8 May, 2023] Caroline: Hey Mel! How was the pottery class?",  # covers pottery + class
        "[9 July, 2023] Melanie: Great, I'll save you a seat.",  # only the masked name
    ]
    value, cover = ev.query_evidence(query, lexicon, [0.30, 0.55], rows)
    assert cover > 0.5 and value == pytest.approx(0.30 + ev.WEIGHT * cover)
    # with weight 0 the evidence is the top cosine
    assert ev.query_evidence(query, lexicon, [0.30, 0.55], rows, weight=0.0)[0] == pytest.approx(0.55)
    assert ev.query_evidence(query, lexicon, [], []) == (-math.inf, 0.0)


@given(
    st.text(max_size=120),
    st.lists(st.tuples(st.floats(-1, 1), st.text(max_size=80)), min_size=1, max_size=8),
)
def test_evidence_lies_between_the_top_cosine_and_it_plus_the_weight(query: str, rows: Any) -> None:
    lexicon = ev.build_lexicon(CHAT)
    cosines = [c for c, _ in rows]
    value, cover = ev.query_evidence(query, lexicon, cosines, [t for _, t in rows])
    assert max(cosines) - 1e-9 <= value <= max(cosines) + ev.WEIGHT + 1e-9
    assert 0.0 <= cover <= 1.0 + 1e-9


# -- the stored state and the gate -------------------------------------------------------------------
def test_long_records_are_marked_by_the_75th_percentile_of_row_lengths() -> None:
    lexicon = ev.build_lexicon(CHAT)
    tops, values = np.array([0.3]), np.array([0.5])
    short = cal.gate_state(tops, values, lexicon, row_chars=[100] * 80 + [5000] * 20)
    long = cal.gate_state(tops, values, lexicon, row_chars=[100] * 60 + [1500] * 40)
    assert short["row_chars_p75"] == 100 and cal.long_records(short) is None
    assert long["row_chars_p75"] == 1500 and cal.long_records(long) == 1500
    assert "row_chars_p75" not in cal.gate_state(tops, values, lexicon)  # entries made before: short
    for odd in (
        None,
        {},
        {"row_chars_p75": True},
        {"row_chars_p75": "900"},
        {"row_chars_p75": cal.LONG_ROW_CHARS - 1},
    ):
        assert cal.long_records(odd) is None
    assert cal.long_records({"row_chars_p75": cal.LONG_ROW_CHARS}) == cal.LONG_ROW_CHARS


def test_gate_state_round_trips_and_old_entries_key_on_cosine() -> None:
    lexicon = ev.build_lexicon(CHAT)
    state = cal.gate_state(np.array([0.3, 0.2]), np.array([0.9, -np.inf, 0.5]), lexicon)
    assert state["kind"] == cal.GATE_KIND and state["probe_evidence"] == [0.5, 0.9] and state["probes"] == 2
    values, lex, weight = cal.gate_inputs(state)  # type: ignore[misc]
    assert values == [0.5, 0.9] and lex == lexicon and weight == ev.WEIGHT
    assert cal.gate_inputs({"kind": "query_top_cosine", "probe_top_cosines": [0.2, 0.3]}) == (
        [0.2, 0.3],
        None,
        0.0,
    )
    for broken in (
        None,
        {},
        {**state, "lexicon": "x"},
        {**state, "probe_evidence": []},
        {"probe_top_cosines": [True]},
    ):
        assert cal.gate_inputs(broken) is None


def scored(text: str, score: float, cosine: float | None) -> ScoredRow:
    fused = fusion.Fused(f"mem:{abs(hash(text)) % 1000}", score, "rsf", cosine=cosine, rsf=score)
    row = {"type": "memory", "id": abs(hash(text)) % 1000, "content": text}
    return ScoredRow(row=row, fused=fused, score=score)


def test_the_gate_keys_on_evidence_when_calibrated_with_a_lexicon() -> None:
    lexicon = ev.build_lexicon(CHAT)
    rows = [scored(CHAT[0], 2.0, 0.40), scored(CHAT[5], 1.0, 0.45)]
    policy = GatePolicy("calibrated", "balanced", 1.0, 0.8, lexicon=lexicon)
    gate = QualityGate(lambda agent: policy)
    real = RecallRequest(Scope("a"), "How was Melanie's pottery class?", 10)
    renamed = RecallRequest(Scope("a"), "What did Caroline say about her job interview at the bank?", 10)
    passed = gate.apply(list(rows), real, GateEvidence(top_cosine=0.45))
    assert passed.info["keyed_on"] == "evidence" and passed.info["passed"] is True
    assert passed.info["evidence"] >= 0.8 > passed.info["top_cosine"] and passed.info["coverage"] > 0
    cut = gate.apply(list(rows), renamed, GateEvidence(top_cosine=0.45))
    assert cut.info["passed"] is False and cut.rows == [] and cut.info["evidence"] < 0.8
    # without a lexicon (a calibration from before scoring version 2) it keys on the top cosine
    old = QualityGate(lambda agent: GatePolicy("calibrated", "balanced", 1.0, 0.42))
    assert old.apply(list(rows), renamed, GateEvidence(top_cosine=0.45)).info["keyed_on"] == "top_cosine"


def test_query_words_are_bounded() -> None:
    words = ev.query_words(" ".join(f"word{i}" for i in range(500)) + " " + "a" * 8000, [])
    assert len(words) == ev.MAX_WORDS and all(len(w) <= ev.MAX_WORD_CHARS for w in words)
    assert ev.query_words("x" * 8000, []) == []
