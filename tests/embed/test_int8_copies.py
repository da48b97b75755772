"""The choice among the int8 query copies: the order they are tried in, and what stays alive meanwhile.

The copies' sessions here are stand-ins whose query vectors agree with float32 or not, as told; the
graph rewritten is MiniLM's real file. The real copies are checked in test_query_kernel.py and
test_int8_outliers.py.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from cpersona.embed.runtime import int8_copies, int8_outliers

MINILM = "all-minilm-l6-v2"


class Copy:
    """A stand-in session: which copy it is."""

    def __init__(self, kind: str) -> None:
        self.kind = kind


def _choose(
    models_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    agrees: dict[str, bool],
    kinds: tuple[str, ...] = int8_outliers.KINDS,
) -> tuple[int8_copies.KernelChoice, Copy | None, list[str], list[list[bool]]]:
    """Run the choice with stand-in copies; returns the choice, the copy chosen, the kinds built in
    order, and for each build whether the copies built before it were still alive."""
    built: list[tuple[str, weakref.ref[Copy]]] = []
    alive_at_build: list[list[bool]] = []

    def build(kind: str) -> Copy:
        alive_at_build.append([ref() is not None for _, ref in built])
        copy = Copy(kind)
        built.append((kind, weakref.ref(copy)))
        return copy

    monkeypatch.setattr(int8_copies, "outlier_peaks", lambda maker, per_block: {"measured": np.ones(1)})
    monkeypatch.setattr(int8_copies, "outlier_copy", lambda maker, peaks, kind: build(kind))

    def embedder(session: Copy) -> Callable[[str], np.ndarray]:
        near = session.kind == "float32" or agrees[session.kind]
        return lambda text: np.array([1.0, 0.0] if near else [0.6, 0.8], dtype=np.float32)

    maker = int8_copies.CopyMaker(
        path=str(models_dir / MINILM / "onnx" / "model.onnx"),
        session_of=lambda model: build(int8_copies.PER_BLOCK),
        embedder=embedder,
        calibration_feeds=list,
        stop=lambda: False,
        timed=False,
        kinds=kinds,
    )
    choice, chosen = int8_copies.choose(maker, Copy("float32"))
    return choice, chosen, [kind for kind, _ in built], alive_at_build


def test_the_copies_are_tried_in_order_and_a_refused_one_is_gone_before_the_next(
    minilm_models_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    choice, chosen, kinds, alive = _choose(
        minilm_models_dir, monkeypatch, {"u8s8": False, "u8u8": False, "per-block": True}
    )
    assert kinds == [*int8_outliers.KINDS, int8_copies.PER_BLOCK] == ["u8s8", "u8u8", "per-block"]
    # While a copy is built no refused one is still held: one copy at a time beside the model.
    assert alive == [[], [False], [False, False]]
    assert chosen is not None and chosen.kind == "per-block"
    assert choice.int8 and choice.reason.endswith("(per-block int8 products)")


def test_the_first_copy_that_agrees_is_taken_and_the_rest_are_not_built(
    minilm_models_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    choice, chosen, kinds, _ = _choose(
        minilm_models_dir, monkeypatch, {"u8s8": False, "u8u8": True, "per-block": True}
    )
    assert kinds == ["u8s8", "u8u8"]
    assert chosen is not None and chosen.kind == "u8u8"
    assert choice.reason.endswith(f"(u8u8 products, {int8_outliers.OUTLIERS} outlier columns in float)")


def test_when_no_copy_agrees_queries_keep_the_float32_graph(
    minilm_models_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    choice, chosen, kinds, _ = _choose(
        minilm_models_dir, monkeypatch, {"u8s8": False, "u8u8": False, "per-block": False}
    )
    assert kinds == ["u8s8", "u8u8", "per-block"]
    assert chosen is None and choice.kernel == "exact" and "differ too much" in choice.reason


def test_on_a_cpu_without_vnni_the_u8u8_copy_is_tried_first(
    minilm_models_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    order = int8_outliers.kinds_for(frozenset({"sse4_2", "avx2", "fma"}))
    assert order == ("u8u8", "u8s8")
    choice, chosen, kinds, _ = _choose(
        minilm_models_dir, monkeypatch, {"u8s8": True, "u8u8": True, "per-block": True}, order
    )
    assert kinds == ["u8u8"]  # no u8s8 copy built only to be refused
    assert chosen is not None and chosen.kind == "u8u8"
    choice, chosen, kinds, _ = _choose(
        minilm_models_dir, monkeypatch, {"u8s8": True, "u8u8": False, "per-block": True}, order
    )
    assert kinds == ["u8u8", "u8s8"] and chosen is not None and chosen.kind == "u8s8"
