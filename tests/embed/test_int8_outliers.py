"""The outlier query copies (u8s8, u8u8): int8 products over the stored weights, each input's outlier columns
in float."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from model_fixtures import TinyJina, minilm_feeds, tiny_jina_manifest

from cpersona.embed.registry import load_manifest
from cpersona.embed.runtime import int8_matmul, int8_outliers, query_kernel
from cpersona.embed.runtime.onnx_backend import OnnxBackend

MINILM = "all-minilm-l6-v2"
SENTENCES = [
    "ok",
    "kitten",
    "What did Caroline research?",
    "The cat sits on the mat",
    "A much longer sentence about the deployment of the memory server on a laptop without network access "
    "and the steps needed to install the embedding model from a local archive.",
    "Wie heißt die Katze meiner Schwester?",
]


def _unit_rows(session: ort.InferenceSession, backend: OnnxBackend) -> np.ndarray:
    rows = []
    for text in SENTENCES:
        mean = session.run(None, minilm_feeds(backend, text))[0][0].mean(axis=0)
        rows.append(mean / np.linalg.norm(mean))
    return np.array(rows)


def _peaks(path: Path, backend: OnnxBackend) -> tuple[list[str], dict[str, np.ndarray]]:
    per_block = int8_matmul.rewrite(str(path))
    assert per_block is not None
    feeds = [minilm_feeds(backend, t) for t in int8_outliers.CALIBRATION_TEXTS]
    return list(per_block.inputs), int8_outliers.measure_peaks(per_block, _session, feeds)


def _session(model: bytes | str) -> ort.InferenceSession:
    return ort.InferenceSession(model, providers=["CPUExecutionProvider"])


def _probe_agreement(
    float32: ort.InferenceSession, copy: ort.InferenceSession, backend: OnnxBackend
) -> float:
    """The lowest cosine of the two graphs' vectors of the check's probe texts (what the check measures)."""
    rows = []
    for session in (float32, copy):
        rows.append([_unit_row(session, backend, text) for text in query_kernel.PROBE_TEXTS])
    return float((np.array(rows[0]) * np.array(rows[1])).sum(axis=1).min())


def _unit_row(session: ort.InferenceSession, backend: OnnxBackend, text: str) -> np.ndarray:
    mean = session.run(None, minilm_feeds(backend, text))[0][0].mean(axis=0)
    return mean / np.linalg.norm(mean)


def test_each_product_is_split_and_the_copy_stays_close(minilm_models_dir: Path) -> None:
    path = minilm_models_dir / MINILM / "onnx" / "model.onnx"
    backend = OnnxBackend(load_manifest(MINILM), minilm_models_dir / MINILM, query_kernel="exact")
    backend.load()
    names, peaks = _peaks(path, backend)
    assert (
        len(names) == 24
    )  # per layer: the attention input (Q, K, V share it), attention out, two feed-forward
    assert all(peaks[n].shape == (384,) or peaks[n].shape == (1536,) for n in names)

    split = int8_outliers.rewrite(str(path), peaks)
    assert split is not None and split.matmuls == 36 and split.gathers == 2
    graph = onnx.load_model_from_string(split.model).graph
    ops = [node.op_type for node in graph.node]
    assert ops.count("DynamicQuantizeMatMul") == 36 and "MatMulNBits" not in ops
    # Each input's outlier columns are its 16 largest peaks; the stored int8 weights are used as they are.
    columns = {
        i.name: onnx.numpy_helper.to_array(i)
        for i in graph.initializer
        if i.name.endswith(".outlier_columns")
    }
    assert len(columns) == 24
    for name in names:
        expected = np.sort(np.argsort(-peaks[name], kind="stable")[: int8_outliers.OUTLIERS])
        np.testing.assert_array_equal(columns[f"{name}.outlier_columns"], expected)
    # No weight matrix or table is held as float (the per-row table scales are 30,522 numbers).
    floats = [int(np.prod(i.dims)) for i in graph.initializer if i.data_type == onnx.TensorProto.FLOAT]
    assert max(floats) < 100_000

    float32 = _unit_rows(_session(str(path)), backend)
    # u8u8: the same integers as uint8 with a zero point of 128, whose sums never saturate: close to float32
    # on every CPU (u8s8 is not, where the CPU has no VNNI: int8_outliers.py).
    unsigned = int8_outliers.rewrite(str(path), peaks, unsigned=True)
    assert unsigned is not None and unsigned.matmuls == 36
    weights = {i.name: i for i in onnx.load_model_from_string(unsigned.model).graph.initializer}
    stored = next(n for n in weights if n.endswith(".u8s8"))
    signed = onnx.numpy_helper.to_array(next(i for i in graph.initializer if i.name == stored)).astype(
        np.int16
    )
    assert weights[stored].data_type == onnx.TensorProto.UINT8
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(weights[stored]).astype(np.int16) - 128, signed)
    u8u8 = _unit_rows(_session(unsigned.model), backend)
    cosines = (float32 * u8u8).sum(axis=1)
    assert cosines.min() >= query_kernel.MIN_COSINE
    assert not np.allclose(float32, u8u8, atol=1e-6)  # int8 arithmetic, not a copy of the graph

    # Without the outlier columns one scale per tensor is too coarse: that is what the split is for.
    plain = int8_outliers.rewrite(str(path), peaks, outliers=0, unsigned=True)
    assert plain is not None
    coarse = _unit_rows(_session(plain.model), backend)
    assert (float32 * coarse).sum(axis=1).min() < cosines.min()
    backend.close()


def test_missing_peaks_or_a_float_graph_give_no_copy(
    minilm_models_dir: Path, tiny_jina: TinyJina, tiny_jina_models_dir: Path
) -> None:
    path = str(minilm_models_dir / MINILM / "onnx" / "model.onnx")
    per_block = int8_matmul.rewrite(path)
    assert per_block is not None
    some = {name: np.ones(384, dtype=np.float32) for name in per_block.inputs[:3]}
    assert int8_outliers.rewrite(path, some) is None  # a product whose input was never measured
    manifest = tiny_jina_manifest()
    tiny = str(tiny_jina_models_dir / manifest.name / manifest.onnx_file)
    assert int8_outliers.rewrite(tiny, {}) is None


def test_the_check_takes_the_first_outlier_copy_that_agrees_here(
    minilm_models_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Forced (CPERSONA_EMBED_QUERY_KERNEL=int8): the timed part is skipped, so this asserts the choice
    # on any machine; with "auto" a machine without a fast int8 kernel would assert nothing. The order
    # of a VNNI CPU on any CPU (u8s8 first; without VNNI u8u8 is tried first: test_int8_copies.py).
    monkeypatch.setattr(int8_outliers, "cpu_flags", lambda: None)
    backend = OnnxBackend(load_manifest(MINILM), minilm_models_dir / MINILM, query_kernel="int8")
    backend.load()
    choice = backend.choose_query_kernel()
    assert choice.int8, choice
    assert choice.min_cosine is not None and choice.min_cosine >= query_kernel.MIN_COSINE
    # Which one is this machine's: u8s8 where its products agree with float32 here, else u8u8.
    path = minilm_models_dir / MINILM / "onnx" / "model.onnx"
    _, peaks = _peaks(path, backend)
    signed = int8_outliers.rewrite(str(path), peaks)
    assert signed is not None
    agrees = _probe_agreement(_session(str(path)), _session(signed.model), backend) >= query_kernel.MIN_COSINE
    kind = "u8s8" if agrees else "u8u8"
    assert choice.reason.endswith(f"({kind} products, {int8_outliers.OUTLIERS} outlier columns in float)")
    backend.close()


@pytest.mark.parametrize(
    ("flags", "order"),
    [
        (None, ("u8s8", "u8u8")),  # unknown (not Linux): as measured on VNNI machines
        (frozenset({"avx2", "avx512f", "avx512_vnni"}), ("u8s8", "u8u8")),
        (frozenset({"avx2", "avx_vnni"}), ("u8s8", "u8u8")),
        (frozenset({"avx2", "amx_int8"}), ("u8s8", "u8u8")),
        (frozenset({"avx2", "avx512f", "avx512bw"}), ("u8u8", "u8s8")),  # AVX-512 without VNNI
        (frozenset({"sse4_2", "avx2"}), ("u8u8", "u8s8")),
        (frozenset({"fp", "asimd", "asimddp"}), ("u8s8", "u8u8")),  # an ARM CPU: not x86, not measured
    ],
)
def test_the_outlier_copies_order_by_cpu(flags: frozenset[str] | None, order: tuple[str, ...]) -> None:
    assert int8_outliers.kinds_for(flags) == order


def test_this_cpus_flags_are_read_where_linux_lists_them() -> None:
    flags = int8_outliers.cpu_flags()
    if Path("/proc/cpuinfo").exists():
        assert flags and ("avx2" in flags or "asimd" in flags or "fpu" in flags)
    else:
        assert flags is None
