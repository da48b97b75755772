"""Which int8 copy of a loaded graph recall queries run on: each copy is built in turn and checked
against the float32 graph (``query_kernel.check``) until one passes.

The copies, in the order they are tried: the outlier copies (``int8_outliers.KINDS``: u8s8, then u8u8 —
u8u8 first on an x86 CPU without VNNI, ``int8_outliers.kinds_for`` — whose outlier columns are measured
once for both), then the per-block copy (``int8_matmul.py``). The
first that agrees with the float32 graph on the probe texts (and, under ``auto``, is faster) is used;
when none passes or none can be built here, queries keep the float32 graph. A refused copy's session
is dropped before the next is built, so at most one copy is alive beside the model while the check
runs. The backend that holds the model says how to build a session and embed a text (``CopyMaker``);
nothing here loads a model or touches its tokenizer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from cpersona.embed.runtime import int8_matmul, int8_outliers
from cpersona.embed.runtime import query_kernel as kernels
from cpersona.embed.runtime.base import EmbeddingFault
from cpersona.embed.runtime.heap import release_free_memory
from cpersona.embed.runtime.query_kernel import KernelChoice

log = logging.getLogger(__name__)

#: The last copy tried: MatMulNBits over the stored int8 values (int8_matmul.py).
PER_BLOCK = "per-block"


@dataclass(frozen=True)
class CopyMaker:
    """What building and checking a copy needs from the backend that holds the model."""

    #: The model's ONNX file.
    path: str
    #: A session (one thread) of a model given as bytes.
    session_of: Callable[[bytes], Any]
    #: A session → the function embedding one text as a query with it (a unit vector).
    embedder: Callable[[Any], Callable[[str], np.ndarray]]
    #: ``int8_outliers.CALIBRATION_TEXTS`` as the model's inputs (none: no outlier copy is built).
    calibration_feeds: Callable[[], Sequence[Mapping[str, np.ndarray]]]
    #: True once the model is closing or the program ending: the check ends with the float32 graph.
    stop: Callable[[], bool]
    #: False under ``CPERSONA_EMBED_QUERY_KERNEL=int8``: agreement alone decides.
    timed: bool
    #: The outlier copies in the order to try them (``int8_outliers.kinds_for`` this CPU).
    kinds: tuple[str, ...] = int8_outliers.KINDS


def choose(maker: CopyMaker, float32: Any) -> tuple[KernelChoice, Any]:
    """The choice, and the session of the copy chosen (None: the float32 graph ``float32`` stays)."""
    try:
        rewritten = int8_matmul.rewrite(maker.path)
    except ImportError:
        return kernels.exact(kernels.NO_ONNX), None
    except Exception as exc:  # an unusual graph: keep the model's own
        return kernels.exact(f"the graph could not be rewritten: {type(exc).__name__}: {exc}"[:300]), None
    if rewritten is None:
        return kernels.exact("the model stores no int8 MatMul weights"), None
    choice = kernels.exact(kernels.STOPPED)
    peaks: dict[str, np.ndarray] | None = None
    try:
        for kind in (*maker.kinds, PER_BLOCK):
            if maker.stop():
                break
            if kind == PER_BLOCK:
                candidate, label = maker.session_of(rewritten.model), "per-block int8 products"
            else:
                peaks = outlier_peaks(maker, rewritten) if peaks is None else peaks
                candidate = outlier_copy(maker, peaks, kind)
                label = f"{kind} products, {int8_outliers.OUTLIERS} outlier columns in float"
            if candidate is None:
                continue
            choice = kernels.check(
                maker.embedder(float32), maker.embedder(candidate), stop=maker.stop, timed=maker.timed
            )
            if choice.int8:
                return replace(choice, reason=f"{choice.reason} ({label})"), candidate
            candidate = None  # a refused copy's session goes before the next one is built
    except EmbeddingFault as fault:  # closed meanwhile, or the copy fails to run: keep the model's own
        return kernels.exact(f"the check could not run: {fault.reason}"), None
    except Exception as exc:
        return kernels.exact(f"ONNX Runtime cannot run the int8 copy: {type(exc).__name__}"), None
    finally:
        rewritten = None  # the serialised copy (~20 MB) and what building it left on the heap
        release_free_memory()
    return choice, None


def outlier_peaks(maker: CopyMaker, per_block: int8_matmul.Rewritten) -> dict[str, np.ndarray]:
    """``int8_outliers.measure_peaks`` on the model (empty when they cannot be read here: then no outlier
    copy is built, and the per-block copy is still checked)."""
    feeds = maker.calibration_feeds()
    if not feeds:
        return {}
    try:
        return int8_outliers.measure_peaks(per_block, maker.session_of, feeds)
    except Exception as exc:  # an unusual graph
        log.info("recall queries: no outlier peaks (%s: %s)", type(exc).__name__, str(exc)[:200])
        return {}
    finally:
        release_free_memory()  # what the capture session (a second per-block copy) left on the heap


def outlier_copy(maker: CopyMaker, peaks: dict[str, np.ndarray], kind: str) -> Any:
    """The session of the outlier copy ``kind`` (``int8_outliers.KINDS``); None when it cannot be built
    or run here."""
    try:
        split = int8_outliers.rewrite(maker.path, peaks, unsigned=kind == "u8u8") if peaks else None
        if split is None:
            return None
        model, split = split.model, None
        return maker.session_of(model)
    except Exception as exc:  # a runtime without the kernel, an unusual graph: the next copy
        log.info("recall queries: no %s int8 copy (%s: %s)", kind, type(exc).__name__, str(exc)[:200])
        return None
