"""Inference batches (embed/runtime/batching.py): every text once, neighbours by length, never dearer
than cutting every 16, and the same vectors as before."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from cpersona.embed.runtime.batching import (
    CALL_OVERHEAD_TOKENS,
    QUADRATIC_AT,
    batch_cost,
    fixed_batches,
    plan_batches,
)
from cpersona.embed.runtime.onnx_backend import OnnxBackend
from cpersona.services.long_records import embedding_inputs


def plan_cost(lengths: list[int], batches: list[list[int]]) -> float:
    return sum(
        batch_cost(len(b), max(lengths[i] for i in b), CALL_OVERHEAD_TOKENS, QUADRATIC_AT) for b in batches
    )


@given(st.lists(st.integers(1, 512), max_size=60), st.integers(1, 20))
def test_every_text_once_in_runs_of_neighbouring_lengths_never_dearer_than_fixed_cuts(
    lengths: list[int], max_batch: int
) -> None:
    batches = plan_batches(lengths, max_batch)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(lengths)))
    assert all(0 < len(b) <= max_batch for b in batches)
    assert [lengths[i] for i in flat] == sorted(lengths)  # batches follow each other by length
    assert plan_cost(lengths, batches) <= plan_cost(lengths, fixed_batches(lengths, max_batch)) + 1e-6


def test_a_lead_sentence_is_not_padded_to_the_length_of_its_memory() -> None:
    # a long memory's own text (256 tokens), its lead (30) and its blocks (~170-190)
    lengths = [256, 30, 180, 190, 170]
    batches = plan_batches(lengths, 16)
    assert [1] in batches
    assert fixed_batches(lengths, 16) == [[1, 4, 2, 3, 0]]
    assert len(plan_batches([64] * 40, 16)) == 3  # equal lengths: as few calls as the cap allows


def test_the_vectors_are_those_of_the_fixed_cuts(minilm_backend: OnnxBackend) -> None:
    text = " ".join(
        f"On day {n} we walked to the harbour, bought bread at the corner bakery and talked about the trip."
        for n in range(30)
    )
    pieces, _ = embedding_inputs([text], minilm_backend.max_tokens)  # what a store embeds in one call
    assert len(pieces) > 3
    planned = minilm_backend.embed_documents(pieces)
    minilm_backend.batch_plan = fixed_batches
    try:
        fixed = minilm_backend.embed_documents(pieces)
    finally:
        minilm_backend.batch_plan = plan_batches
    alone = np.vstack([minilm_backend.embed_documents([p]) for p in pieces])
    assert np.min(np.sum(planned * fixed, axis=1)) > 0.99999
    np.testing.assert_allclose(planned, alone, atol=1e-5)
