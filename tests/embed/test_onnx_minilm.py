"""The real all-MiniLM-L6-v2 (int8 ONNX from PyPI) end to end through OnnxBackend."""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from cpersona.config import Settings
from cpersona.embed.integrity import read_record
from cpersona.embed.registry import load_manifest
from cpersona.embed.runtime.base import EmbeddingFault, FaultKind
from cpersona.embed.runtime.onnx_backend import OnnxBackend

MINILM = "all-minilm-l6-v2"
PINNED_SENTENCE = "Persistent memory lets an agent recall what happened last week."
# First five components of PINNED_SENTENCE's embedding, computed once: catches numeric drift.
PINNED_VALUES = [0.013565, 0.002771, -0.07171, 0.045339, 0.059518]

MIXED = [
    "ok",
    "The cat sits on the mat",
    "A much longer sentence about the deployment of the memory server on a laptop without network access "
    "and the steps needed to install the embedding model from a local archive.",
    "kitten",
    "Unrelated: quarterly revenue figures",
    "The stock market fell sharply on Tuesday after the announcement.",
    "hi there",
    "Another medium length sentence that sits between the others in token count.",
    "x",
]


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


def test_semantic_similarity(minilm_backend: OnnxBackend) -> None:
    cat, kitten, other = minilm_backend.embed_documents(
        [
            "The cat sits on the mat",
            "A kitten is resting on a rug",
            "The stock market fell sharply on Tuesday",
        ]
    )
    assert cos(cat, kitten) == pytest.approx(0.64, abs=0.03)
    assert abs(cos(cat, other)) < 0.2
    assert cos(cat, kitten) > cos(cat, other) + 0.4


def test_vectors_are_unit_float32(minilm_backend: OnnxBackend) -> None:
    vectors = minilm_backend.embed_documents(MIXED)
    assert vectors.dtype == np.float32 and vectors.shape == (len(MIXED), 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    query = minilm_backend.embed_query("where is the cat")
    assert query.shape == (384,) and query.dtype == np.float32
    assert minilm_backend.model_id == MINILM and minilm_backend.dimension == 384


def test_batch_matches_single_and_keeps_order(minilm_backend: OnnxBackend) -> None:
    # batch_size 4 + mixed lengths: sorting, per-batch padding and reordering are all exercised.
    batch = minilm_backend.embed_documents(MIXED)
    singles = np.vstack([minilm_backend.embed_documents([t]) for t in MIXED])
    np.testing.assert_allclose(batch, singles, atol=1e-5)
    reversed_batch = minilm_backend.embed_documents(MIXED[::-1])
    np.testing.assert_allclose(reversed_batch[::-1], batch, atol=1e-5)


def test_pinned_reference_values(minilm_backend: OnnxBackend) -> None:
    vector = minilm_backend.embed_documents([PINNED_SENTENCE])[0]
    np.testing.assert_allclose(vector[:5], PINNED_VALUES, atol=1e-4)


def test_no_prompts_so_query_equals_document(minilm_models_dir: Path) -> None:
    # On the float32 graph (CPERSONA_EMBED_QUERY_KERNEL=exact); the int8 query kernel is close, not
    # equal: tests/embed/test_query_kernel.py.
    backend = OnnxBackend(load_manifest(MINILM), minilm_models_dir / MINILM, query_kernel="exact")
    backend.load()
    np.testing.assert_allclose(
        backend.embed_query("cat on a mat"), backend.embed_documents(["cat on a mat"])[0], atol=1e-6
    )
    backend.close()


def test_empty_input_and_bad_types(minilm_backend: OnnxBackend) -> None:
    assert minilm_backend.embed_documents([]).shape == (0, 384)
    with pytest.raises(TypeError):
        minilm_backend.embed_documents("not a list")  # type: ignore[arg-type]


def test_truncates_to_max_tokens(minilm_backend: OnnxBackend) -> None:
    ids = minilm_backend.token_ids(["word " * 1000])[0]
    assert len(ids) == 256
    assert np.isfinite(minilm_backend.embed_documents(["word " * 1000])).all()


def test_no_thread_spins_once_a_run_returns(minilm_models_dir: Path) -> None:
    # An idle server burns no CPU (docs/decisions.md, "The query kernel"): with spinning allowed, the pool's threads would keep a core
    # busy for ~50 ms after every query, right when the recall's own threads need it.
    backend = OnnxBackend(load_manifest(MINILM), minilm_models_dir / MINILM, threads=2)
    backend.load()
    backend.choose_query_kernel()  # its check runs in the background after a load: not measured here
    try:
        shares = []
        for embed in [backend.embed_query, lambda text: backend.embed_documents([text])] * 3:
            embed("when is the dentist appointment")
            started = time.process_time()
            time.sleep(0.04)
            shares.append((time.process_time() - started) / 0.04)
        assert sorted(shares)[3] < 0.3, shares  # one spinning thread reads ~1.0 here
    finally:
        backend.close()


def test_concurrent_callers_get_consistent_results(minilm_backend: OnnxBackend) -> None:
    expected = minilm_backend.embed_documents(MIXED)
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(3):
                results.append(minilm_backend.embed_documents(MIXED))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 12
    for r in results:
        np.testing.assert_allclose(r, expected, atol=1e-5)


def test_from_settings_uses_models_dir(minilm_models_dir: Path) -> None:
    settings = Settings(
        models_dir=minilm_models_dir, embedding_model=MINILM, embed_batch_size=2, embed_threads=1
    )
    backend = OnnxBackend.from_settings(load_manifest(MINILM), settings)
    assert backend.model_path == minilm_models_dir / MINILM
    assert (backend.batch_size, backend.threads) == (2, 1)
    backend.load()
    assert backend.loaded and backend.input_names == ["input_ids", "attention_mask", "token_type_ids"]
    backend.close()


# -- faults ------------------------------------------------------------------------------------


def _copy_install(minilm_models_dir: Path, tmp_path: Path) -> Path:
    models = tmp_path / "models"
    shutil.copytree(minilm_models_dir / MINILM, models / MINILM)  # copytree keeps mtimes (copy2)
    return models


def test_missing_model_names_the_fetch_command(tmp_path: Path) -> None:
    backend = OnnxBackend(load_manifest(MINILM), tmp_path / "models" / MINILM)
    with pytest.raises(EmbeddingFault) as info:
        backend.load()
    fault = info.value
    assert fault.kind == FaultKind.MODEL_MISSING
    assert f"cpersona fetch-model {MINILM} --dir {tmp_path / 'models'}" in fault.runbook
    assert "--from" in fault.runbook


def test_missing_file_is_model_missing(minilm_models_dir: Path, tmp_path: Path) -> None:
    models = _copy_install(minilm_models_dir, tmp_path)
    (models / MINILM / "tokenizer.json").unlink()
    with pytest.raises(EmbeddingFault) as info:
        OnnxBackend(load_manifest(MINILM), models / MINILM).load()
    assert info.value.kind == FaultKind.MODEL_MISSING and "tokenizer.json" in info.value.evidence


def test_corrupt_byte_after_install_is_hash_mismatch(minilm_models_dir: Path, tmp_path: Path) -> None:
    models = _copy_install(minilm_models_dir, tmp_path)
    onnx_path = models / MINILM / "onnx" / "model.onnx"
    with onnx_path.open("r+b") as fh:
        fh.seek(1_000_000)
        byte = fh.read(1)
        fh.seek(1_000_000)
        fh.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(EmbeddingFault) as info:
        OnnxBackend(load_manifest(MINILM), models / MINILM).load()
    assert info.value.kind == FaultKind.HASH_MISMATCH
    assert "onnx/model.onnx" in info.value.evidence and "fetch-model" in info.value.runbook


def test_full_verify_catches_corruption_that_kept_the_mtime(minilm_models_dir: Path, tmp_path: Path) -> None:
    models = _copy_install(minilm_models_dir, tmp_path)
    tok = models / MINILM / "tokenizer.json"
    st = tok.stat()
    data = bytearray(tok.read_bytes())
    data[-2] = ord(" ") if data[-2] != ord(" ") else ord("\n")
    tok.write_bytes(bytes(data))
    os.utime(tok, ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(EmbeddingFault) as info:
        OnnxBackend(load_manifest(MINILM), models / MINILM, verify="full").load()
    assert info.value.kind == FaultKind.HASH_MISMATCH


def test_touched_but_intact_file_loads_and_refreshes_record(minilm_models_dir: Path, tmp_path: Path) -> None:
    models = _copy_install(minilm_models_dir, tmp_path)
    tok = models / MINILM / "tokenizer.json"
    tok.write_bytes(tok.read_bytes())  # same bytes, new mtime
    backend = OnnxBackend(load_manifest(MINILM), models / MINILM)
    backend.load()
    record = read_record(models / MINILM)
    assert record is not None and record.files["tokenizer.json"].mtime_ns == tok.stat().st_mtime_ns


def test_corrupt_onnx_without_record_is_session_fault(minilm_models_dir: Path, tmp_path: Path) -> None:
    models = _copy_install(minilm_models_dir, tmp_path)
    (models / MINILM / "install.json").unlink()
    (models / MINILM / "onnx" / "model.onnx").write_bytes(b"this is not an onnx protobuf" * 100)
    with pytest.raises(EmbeddingFault) as info:
        OnnxBackend(load_manifest(MINILM), models / MINILM).load()
    assert info.value.kind in (FaultKind.CORRUPT_MODEL, FaultKind.SESSION_ERROR)
    assert "model.onnx" in info.value.evidence


def test_manifest_dimension_differs_from_model(minilm_models_dir: Path) -> None:
    manifest = replace(load_manifest(MINILM), dimension=512)
    with pytest.raises(EmbeddingFault) as info:
        OnnxBackend(manifest, minilm_models_dir / MINILM).load()
    assert info.value.kind == FaultKind.DIMENSION_MISMATCH and "384" in info.value.evidence


def test_matryoshka_cut_refused_for_model_without_it(minilm_models_dir: Path) -> None:
    backend = OnnxBackend(load_manifest(MINILM), minilm_models_dir / MINILM, embedding_dim=128)
    with pytest.raises(EmbeddingFault) as info:
        backend.load()
    assert info.value.kind == FaultKind.MISCONFIGURED and "CPERSONA_EMBEDDING_DIM" in info.value.evidence


@pytest.mark.parametrize("module", ["onnxruntime", "tokenizers"])
def test_runtime_import_failure_is_import_error(
    minilm_models_dir: Path, monkeypatch: pytest.MonkeyPatch, module: str
) -> None:
    # A None entry in sys.modules makes the import raise ImportError, as if the package were absent.
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(EmbeddingFault) as info:
        OnnxBackend(load_manifest(MINILM), minilm_models_dir / MINILM).load()
    assert info.value.kind == FaultKind.IMPORT_ERROR and "pip install" in info.value.runbook


def test_load_can_be_retried_after_the_fix(minilm_models_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "models" / MINILM
    backend = OnnxBackend(load_manifest(MINILM), target)
    with pytest.raises(EmbeddingFault):
        backend.load()
    shutil.copytree(minilm_models_dir / MINILM, target)
    backend.load()
    assert backend.embed_documents(["back again"]).shape == (1, 384)
