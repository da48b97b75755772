"""The query kernel's faster int8 copy: u8s8 products, each input's outlier columns multiplied in float.

ONNX Runtime's ``DynamicQuantizeMatMul`` (contrib domain) quantises its activation tensor to uint8 with
one scale and runs the stored int8 weights (one scale per output column) through its u8s8 kernel,
which uses AMX or VNNI where the CPU has them: at a query's length ~4x faster than ``MatMulNBits``
(int8_matmul.py), whose per-block activations run a slower int8 path. One scale for a whole tensor
alone loses precision: a transformer's activations carry a few columns (fixed dimensions of the
model) far above the rest, and the scale follows them (cosine to float32 0.990, single words 0.977).

So every product's input ``A`` is split. Its ``OUTLIERS`` columns of largest magnitude (measured once
per load by running ``CALIBRATION_TEXTS`` through the ``MatMulNBits`` copy) are zeroed in the part
that is quantised, and multiplied in float32 by the same weight rows the graph uses (``W_q * scale``,
the values the export stores); the two products are added. Embedding tables stored as int8 are
gathered in int8 as in int8_matmul.py. The weights are still the stored ones;
only the activations outside the outlier columns are quantised. The caller checks the result against
the float32 graph before using it (query_kernel.py), as for the ``MatMulNBits`` copy.

Two copies, tried in turn (``KINDS``). **u8s8** hands the kernel the signed weights as stored. Where
the CPU has no VNNI or AMX (AVX2, or AVX-512 without VNNI), that kernel adds pairs of uint8 × int8
products into 16-bit sums (``vpmaddubsw``), which saturate: on such a machine (measured on an AMD CPU
with AVX2) the copy's cosine to float32 falls to 0.991 and the check refuses it. **u8u8** hands it the
same weights shifted by 128 with a zero point of 128 (the same integers: ``(w + 128) - 128``), which
ONNX Runtime multiplies after widening to 16 bits, with no saturation: cosine 0.9988 there, slower
than u8s8 where VNNI runs it. So on an x86 CPU known to lack VNNI, u8u8 is tried first (``kinds_for``):
building and checking a u8s8 copy there only to refuse it cost about half a second of each process.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from cpersona.embed.runtime.int8_matmul import GraphEdit, Rewritten, load_graph

#: The outlier copies in the order the check tries them (the module's docstring says why both).
KINDS = ("u8s8", "u8u8")
#: CPU flags (Linux's names) of an x86 int8 dot product that does not saturate: VNNI, AMX.
VNNI_FLAGS = frozenset({"avx512_vnni", "avx_vnni", "amx_int8"})


def cpu_flags() -> frozenset[str] | None:
    """This CPU's feature flags as Linux lists them in /proc/cpuinfo (None where it cannot be read)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.startswith("flags"):
                    return frozenset(line.partition(":")[2].split())
    except OSError:
        pass
    return None


def kinds_for(flags: frozenset[str] | None) -> tuple[str, ...]:
    """``KINDS`` in the order to try them on a CPU with these flags: u8u8 first on an x86 CPU with AVX2
    and no VNNI (its u8s8 sums saturate), else u8s8 first (None: flags unknown)."""
    if flags is not None and "avx2" in flags and not flags & VNNI_FLAGS:
        return ("u8u8", "u8s8")
    return KINDS


#: Input columns per product multiplied in float (chosen on LoCoMo: docs/history/decisions-rounds.md, round 11).
OUTLIERS = 16

#: Texts whose activations locate the outlier columns: sentences of the lengths agents store and ask,
#: none of them a query-kernel probe text (those judge the copy afterwards).
CALIBRATION_TEXTS = (
    "yes",
    "the meeting moved to Thursday",
    "Remember that Priya prefers tea over coffee in the mornings.",
    "What did we decide about the release schedule for the mobile app?",
    "He said the hiking trip was cancelled because of the storm warning near the lake.",
    "Error 502 from the gateway after rotating the TLS certificates on staging",
    "Meine Großmutter hat früher in einer Bäckerei in Köln gearbeitet.",
    "notes: buy batteries, call the plumber, renew the passport before June",
    "She finished her first marathon in just under four hours and wants to try a trail race next.",
    "Which editor theme does the user like, and which keyboard shortcuts did they ask to change?",
    "we adopted a rescue dog named Biscuit last spring",
    "How long has Mateo been learning the cello?",
)


def with_outputs(model: bytes, names: Iterable[str]) -> bytes:
    """``model`` with the tensors ``names`` as extra graph outputs (to read them while it runs)."""
    from onnx import TensorProto, helper

    graph = load_graph(model)
    graph.graph.output.extend(helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in names)
    return bytes(graph.SerializeToString())


def column_peaks(
    run: Callable[[Mapping[str, np.ndarray]], list[np.ndarray]], names: list[str], feeds: Iterable[Any]
) -> dict[str, np.ndarray]:
    """The largest magnitude of each column of each tensor of ``names`` over the runs of ``feeds``
    (``run(feed)`` returns those tensors, in the order of ``names``)."""
    peaks: dict[str, np.ndarray] = {}
    for feed in feeds:
        for name, tensor in zip(names, run(feed), strict=True):
            column_max = np.abs(tensor.reshape(-1, tensor.shape[-1])).max(axis=0)
            peaks[name] = column_max if name not in peaks else np.maximum(peaks[name], column_max)
    return peaks


def measure_peaks(
    per_block: Rewritten, session_of: Callable[[bytes], Any], feeds: Iterable[Mapping[str, np.ndarray]]
) -> dict[str, np.ndarray]:
    """``column_peaks`` of every product input of ``per_block`` (int8_matmul.py's copy) over the runs of
    ``feeds``, read from its activations in a session ``session_of`` builds from a model's bytes."""
    names = list(per_block.inputs)
    capture = session_of(with_outputs(per_block.model, names))
    return column_peaks(lambda feed: capture.run(names, feed), names, feeds)


def rewrite(
    source: bytes | str, peaks: Mapping[str, np.ndarray], outliers: int | None = None, unsigned: bool = False
) -> Rewritten | None:
    """The graph at ``source`` with each int8-weight product split as the module says, the outlier columns
    of each input being its ``outliers`` (default ``OUTLIERS``) largest in ``peaks``; ``None`` when it has no such product or a
    product's input has no peaks. ``unsigned``: the u8u8 copy (weights shifted by 128), else u8s8."""
    from onnx import helper, numpy_helper

    outliers = OUTLIERS if outliers is None else outliers
    edit = GraphEdit.of(source)
    split_inputs: set[str] = set()
    for product in edit.products():
        weights, base = product.weights, product.name
        k, n = weights.shape
        scale = np.ascontiguousarray(np.broadcast_to(product.scale.reshape(-1), (n,)), dtype=np.float32)
        if unsigned:  # the same integers, as uint8 with a zero point of 128
            stored = (weights.astype(np.int16) + 128).astype(np.uint8)
            zero = np.full(n, 128, dtype=np.uint8)
        else:
            stored, zero = weights, np.zeros(n, dtype=np.int8)
        edit.added += [
            numpy_helper.from_array(stored, f"{base}.u8s8"),
            numpy_helper.from_array(scale, f"{base}.u8s8_scales"),
            numpy_helper.from_array(zero, f"{base}.u8s8_zero_points"),
        ]
        for matmul in product.matmuls:
            a, out = matmul.input[0], matmul.output[0]
            if a not in peaks or peaks[a].shape != (k,):
                return None
            columns = np.sort(np.argsort(-peaks[a], kind="stable")[: min(outliers, k)]).astype(np.int64)
            nodes = []
            if a not in split_inputs:  # products sharing an input (Q, K, V) share its split
                split_inputs.add(a)
                keep = np.ones(k, dtype=np.float32)
                keep[columns] = 0.0
                edit.added += [
                    numpy_helper.from_array(keep, f"{a}.inliers_mask"),
                    numpy_helper.from_array(columns, f"{a}.outlier_columns"),
                ]
                nodes += [
                    helper.make_node("Mul", [a, f"{a}.inliers_mask"], [f"{a}.inliers"], name=f"{a}.inliers"),
                    helper.make_node(
                        "Gather",
                        [a, f"{a}.outlier_columns"],
                        [f"{a}.outliers"],
                        axis=-1,
                        name=f"{a}.outliers",
                    ),
                ]
            rows = f"{matmul.name or out}.outlier_rows"
            edit.added.append(
                numpy_helper.from_array(weights[columns].astype(np.float32) * scale[None, :], rows)
            )
            nodes += [
                helper.make_node(
                    "DynamicQuantizeMatMul",
                    [f"{a}.inliers", f"{base}.u8s8", f"{base}.u8s8_scales", f"{base}.u8s8_zero_points"],
                    [f"{out}.u8s8"],
                    name=f"{out}.u8s8",
                    domain="com.microsoft",
                ),
                helper.make_node("MatMul", [f"{a}.outliers", rows], [f"{out}.float"], name=f"{out}.float"),
                helper.make_node("Add", [f"{out}.u8s8", f"{out}.float"], [out], name=f"{out}.sum"),
            ]
            edit.replaced[id(matmul)] = nodes
        edit.drop(product)
    return edit.finish()
