"""The jina v5 path (last-token pooling, prompts, Matryoshka, external weights) on a tiny built graph.

The real model is ~1 GB on an unreachable hub; ``model_fixtures.build_tiny_jina``
makes a graph with the same input/output names and shapes whose output the
test can compute exactly in numpy.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from model_fixtures import TinyJina

from cpersona.embed.integrity import read_record
from cpersona.embed.registry import load_manifest
from cpersona.embed.runtime.base import EmbeddingFault, FaultKind
from cpersona.embed.runtime.onnx_backend import OnnxBackend
from cpersona.embed.runtime.pooling import cls_pool, last_token_pool, mean_pool, pool

JINA = "jina-v5-nano"


def _backend(models: Path, **kwargs: object) -> OnnxBackend:
    backend = OnnxBackend(load_manifest(JINA), models / JINA, **kwargs)  # type: ignore[arg-type]
    backend.load()
    return backend


def test_external_data_model_installs_through_from(tiny_jina_models_dir: Path) -> None:
    target = tiny_jina_models_dir / JINA
    assert (target / "onnx" / "model.onnx_data").stat().st_size > 1_000_000
    assert (target / "onnx" / "model.onnx").stat().st_size < 10_000  # weights are not inline
    record = read_record(target)
    assert record is not None and set(record.files) == {
        "onnx/model.onnx",
        "onnx/model.onnx_data",
        "tokenizer.json",
    }
    backend = _backend(tiny_jina_models_dir)
    assert backend.input_names == ["input_ids", "attention_mask"]
    assert (backend.model_id, backend.dimension) == (JINA, 768)


def test_last_token_pooling_under_right_padding(tiny_jina: TinyJina, tiny_jina_models_dir: Path) -> None:
    texts = ["hello", "the cat sits on the mat", "a much longer text than the other one hello world"]
    backend = _backend(tiny_jina_models_dir, batch_size=8)  # one batch: rows padded to the longest
    vectors = backend.embed_documents(texts)
    lengths = set()
    for text, vec in zip(texts, vectors, strict=True):
        ids = tiny_jina.encode("Document: " + text)
        lengths.add(len(ids))
        np.testing.assert_allclose(vec, tiny_jina.expected(ids), atol=1e-5)
    assert len(lengths) == 3  # really different lengths, so two rows carried padding


def test_prompts_follow_the_role(tiny_jina: TinyJina, tiny_jina_models_dir: Path) -> None:
    backend = _backend(tiny_jina_models_dir)
    query_ids = backend.token_ids(["the cat"], role="query")[0]
    doc_ids = backend.token_ids(["the cat"], role="document")[0]
    assert query_ids == tiny_jina.encode("Query: the cat")
    assert doc_ids == tiny_jina.encode("Document: the cat")
    assert (
        query_ids[1:3] == tiny_jina.encode("query :")[1:3]
        and doc_ids[1:3] == tiny_jina.encode("document :")[1:3]
    )
    query = backend.embed_query("the cat")
    doc = backend.embed_documents(["the cat"])[0]
    np.testing.assert_allclose(query, tiny_jina.expected(query_ids), atol=1e-5)
    np.testing.assert_allclose(doc, tiny_jina.expected(doc_ids), atol=1e-5)
    assert float(np.dot(query, doc)) < 0.999


def test_matryoshka_truncation_renormalises(tiny_jina: TinyJina, tiny_jina_models_dir: Path) -> None:
    backend = _backend(tiny_jina_models_dir, embedding_dim=256)
    assert (backend.model_id, backend.dimension) == (f"{JINA}@256", 256)
    vectors = backend.embed_documents(["hello world", "the quick brown fox"])
    assert vectors.shape == (2, 256) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    ids = tiny_jina.encode("Document: hello world")
    np.testing.assert_allclose(vectors[0], tiny_jina.expected(ids, dim=256), atol=1e-5)
    assert backend.embed_query("hello").shape == (256,)


def test_full_dimension_is_not_a_cut(tiny_jina_models_dir: Path) -> None:
    backend = _backend(tiny_jina_models_dir, embedding_dim=768)
    assert (backend.model_id, backend.dimension) == (JINA, 768)


@pytest.mark.parametrize("dim", [100, 1024])
def test_unsupported_matryoshka_dims_are_misconfigured(tiny_jina_models_dir: Path, dim: int) -> None:
    with pytest.raises(EmbeddingFault) as info:
        _backend(tiny_jina_models_dir, embedding_dim=dim)
    assert info.value.kind == FaultKind.MISCONFIGURED
    assert "256" in info.value.runbook  # lists the supported cuts


def test_max_tokens_override_truncates(tiny_jina_models_dir: Path) -> None:
    backend = _backend(tiny_jina_models_dir, max_tokens=6)
    ids = backend.token_ids(["hello world hello world hello world"], role="query")[0]
    assert len(ids) == 6 and ids[-1] == 3  # <eos> survives truncation: the pooled token stays the end marker


def test_missing_external_weights_is_model_missing(tiny_jina: TinyJina, tmp_path: Path) -> None:
    import shutil

    target = tmp_path / JINA
    shutil.copytree(tiny_jina.source_dir, target)
    (target / "onnx" / "model.onnx_data").unlink()
    with pytest.raises(EmbeddingFault) as info:
        OnnxBackend(load_manifest(JINA), target).load()
    assert info.value.kind == FaultKind.MODEL_MISSING and "model.onnx_data" in info.value.evidence
    assert f"cpersona fetch-model {JINA}" in info.value.runbook


# -- pooling functions on hand-made arrays -------------------------------------------------------


def _hidden() -> np.ndarray:
    # hidden[b, s] = [b, s, 1]: the pooled vector says which position was picked.
    b, s = np.meshgrid(np.arange(2), np.arange(4), indexing="ij")
    return np.stack([b, s, np.ones_like(b)], axis=-1).astype(np.float32)


def test_last_token_pool_right_and_left_padding() -> None:
    right = np.array([[1, 1, 0, 0], [1, 1, 1, 1]])
    left = np.array([[0, 0, 1, 1], [0, 1, 1, 1]])
    assert last_token_pool(_hidden(), right)[:, 1].tolist() == [1, 3]
    assert last_token_pool(_hidden(), left)[:, 1].tolist() == [3, 3]


def test_cls_and_mean_pool_ignore_padding() -> None:
    right = np.array([[1, 1, 0, 0], [1, 1, 1, 1]])
    assert cls_pool(_hidden(), right)[:, 1].tolist() == [0, 0]
    assert cls_pool(_hidden(), np.array([[0, 0, 1, 1], [1, 1, 1, 1]]))[:, 1].tolist() == [2, 0]
    assert mean_pool(_hidden(), right)[:, 1].tolist() == [0.5, 1.5]
    with pytest.raises(ValueError):
        pool("max", _hidden(), right)
