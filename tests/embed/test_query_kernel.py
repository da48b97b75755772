"""The query kernel: MiniLM's int8 weights run in int8 for recall queries, checked against float32."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from model_fixtures import TinyJina, minilm_feeds, tiny_jina_manifest

from cpersona.config import Settings
from cpersona.embed.registry import load_manifest
from cpersona.embed.runtime import int8_copies, int8_matmul, int8_outliers, query_kernel
from cpersona.embed.runtime.onnx_backend import OnnxBackend
from cpersona.memory import Memory

MINILM = "all-minilm-l6-v2"
SENTENCES = [
    "ok",
    "What did Caroline research?",
    "The cat sits on the mat",
    "A much longer sentence about the deployment of the memory server on a laptop without network access "
    "and the steps needed to install the embedding model from a local archive.",
    "Wie heißt die Katze meiner Schwester?",
]
PINNED_SENTENCE = "Persistent memory lets an agent recall what happened last week."


def _backend(models_dir: Path, kernel: str = "auto") -> OnnxBackend:
    backend = OnnxBackend(load_manifest(MINILM), models_dir / MINILM, query_kernel=kernel)
    backend.load()
    return backend


def _unit_rows(session: ort.InferenceSession, backend: OnnxBackend, texts: list[str]) -> np.ndarray:
    rows = []
    for ids in backend.token_ids(texts):
        feeds = {
            "input_ids": np.array([ids], dtype=np.int64),
            "attention_mask": np.ones((1, len(ids)), dtype=np.int64),
            "token_type_ids": np.zeros((1, len(ids)), dtype=np.int64),
        }
        hidden = session.run(None, feeds)[0][0]
        mean = hidden.mean(axis=0)
        rows.append(mean / np.linalg.norm(mean))
    return np.array(rows)


def _record_outlier_copies(monkeypatch: pytest.MonkeyPatch, without: str | None = None) -> list[str]:
    """The outlier copies the check asks for, in order (the list fills as it runs); ``without``: that
    kind cannot be built here."""
    build = int8_copies.outlier_copy
    kinds: list[str] = []

    def recorded(maker: int8_copies.CopyMaker, peaks: dict[str, np.ndarray], kind: str) -> object:
        kinds.append(kind)
        return None if kind == without else build(maker, peaks, kind)

    monkeypatch.setattr(int8_copies, "outlier_copy", recorded)
    return kinds


def _copy_vector(backend: OnnxBackend, models_dir: Path, reason: str, text: str) -> np.ndarray:
    """``text``'s query vector from the int8 copy ``reason`` names, built here from the module functions
    and run in a session of its own: int8 arithmetic differs between CPUs (VNNI or not, ONNX Runtime's
    kernels per instruction set), so the backend is compared with the copy on this machine, not with
    values pinned on another."""
    path = str(models_dir / MINILM / "onnx" / "model.onnx")
    per_block = int8_matmul.rewrite(path)
    assert per_block is not None
    model = per_block.model
    for kind in int8_outliers.KINDS:
        if f"({kind} products" in reason:
            feeds = [minilm_feeds(backend, t) for t in int8_outliers.CALIBRATION_TEXTS]
            peaks = int8_outliers.measure_peaks(per_block, _session, feeds)
            split = int8_outliers.rewrite(path, peaks, unsigned=kind == "u8u8")
            assert split is not None
            model = split.model
    assert "per-block" in reason or model is not per_block.model
    return _unit_rows(_session(model), backend, [text])[0]


def _session(model: bytes) -> ort.InferenceSession:
    return ort.InferenceSession(model, providers=["CPUExecutionProvider"])


def test_rewrite_runs_every_int8_matmul_in_int8_and_stays_close(minilm_models_dir: Path) -> None:
    path = minilm_models_dir / MINILM / "onnx" / "model.onnx"
    rewritten = int8_matmul.rewrite(str(path))
    assert rewritten is not None
    assert rewritten.matmuls == 36  # 6 layers x (query, key, value, output, two feed-forward)
    assert rewritten.gathers == 2  # the word and position tables
    graph = onnx.load_model_from_string(rewritten.model).graph
    ops = [node.op_type for node in graph.node]
    assert ops.count("MatMulNBits") == 36
    # No int8 weight is rebuilt as float any more: MatMuls read it in int8, tables cast only gathered rows.
    consumers = {name: node.op_type for node in graph.node for name in node.input}
    int8 = {i.name for i in graph.initializer if i.data_type == onnx.TensorProto.INT8}
    casts = [n for n in graph.node if n.op_type == "Cast" and n.input[0] in int8]
    assert all(consumers.get(n.output[0]) != "MatMul" for n in casts)

    backend = _backend(minilm_models_dir, "exact")
    float32 = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    int8_session = ort.InferenceSession(rewritten.model, providers=["CPUExecutionProvider"])
    exact_rows = _unit_rows(float32, backend, SENTENCES)
    int8_rows = _unit_rows(int8_session, backend, SENTENCES)
    cosines = (exact_rows * int8_rows).sum(axis=1)
    assert cosines.min() >= query_kernel.MIN_COSINE
    assert not np.allclose(exact_rows, int8_rows, atol=1e-6)  # int8 arithmetic, not a copy of the graph
    np.testing.assert_allclose(exact_rows, backend.embed_documents(SENTENCES), atol=1e-5)


def test_rewrite_from_bytes_matches_rewrite_from_path(minilm_models_dir: Path) -> None:
    path = minilm_models_dir / MINILM / "onnx" / "model.onnx"
    from_path, from_bytes = int8_matmul.rewrite(str(path)), int8_matmul.rewrite(path.read_bytes())
    assert from_path is not None and from_bytes is not None
    assert from_path.model == from_bytes.model


def test_a_float_graph_is_left_alone(tiny_jina: TinyJina, tiny_jina_models_dir: Path) -> None:
    manifest = tiny_jina_manifest()
    assert int8_matmul.rewrite(str(tiny_jina_models_dir / manifest.name / manifest.onnx_file)) is None
    backend = OnnxBackend(manifest, tiny_jina_models_dir / manifest.name)
    backend.load()
    choice = backend.choose_query_kernel()
    assert choice.kernel == "exact" and choice.reason == "the model stores no int8 MatMul weights"
    np.testing.assert_allclose(backend.embed_query("x y"), backend.embed_query("x y"), atol=0)


@pytest.mark.parametrize(
    ("min_cosine", "ratio", "kernel", "why"),
    [
        (0.9995, 0.6, "int8", "agrees"),
        (0.994, 0.6, "exact", "differ too much"),
        (0.9995, 0.97, "exact", "not faster"),
        (query_kernel.MIN_COSINE, query_kernel.MAX_TIME_RATIO, "int8", "agrees"),
    ],
)
def test_decide(min_cosine: float, ratio: float, kernel: str, why: str) -> None:
    choice = query_kernel.decide(min_cosine, ratio)
    assert choice.kernel == kernel and why in choice.reason
    assert choice.as_dict()["speedup"] == round(1 / ratio, 2)


def test_check_measures_both_graphs_on_every_probe_text() -> None:
    seen: list[tuple[str, str]] = []

    def embed(name: str, vector: np.ndarray):  # type: ignore[no-untyped-def]
        def run(text: str) -> np.ndarray:
            seen.append((name, text))
            return vector

        return run

    a = np.array([1.0, 0.0], dtype=np.float32)
    b = np.array([0.6, 0.8], dtype=np.float32)
    choice = query_kernel.check(embed("f", a), embed("i", b), texts=("one", "two"), rounds=2)
    assert choice.kernel == "exact" and choice.min_cosine == pytest.approx(0.6)
    assert "differ too much" in choice.reason and choice.speedup is None
    assert seen == [("f", "one"), ("i", "one"), ("f", "two"), ("i", "two")]  # refused untimed
    seen.clear()
    choice = query_kernel.check(embed("f", a), embed("i", a), texts=("one", "two"), rounds=2)
    assert choice.min_cosine == pytest.approx(1.0) and choice.speedup is not None
    assert sorted(set(seen)) == [("f", "one"), ("f", "two"), ("i", "one"), ("i", "two")]
    assert len(seen) == 2 * 2 * (1 + 2)  # the cosine pass, then two timed rounds
    # Per text the graphs take turns, each going first every other round: f i, i f.
    assert seen[4:8] == [("f", "one"), ("i", "one"), ("i", "one"), ("f", "one")]
    assert query_kernel.ROUNDS >= 5  # one fastest-of-two check in eight misread a quiet machine


def test_auto_backend_uses_the_kernel_its_check_chose(minilm_models_dir: Path) -> None:
    backend = _backend(minilm_models_dir)
    choice = backend.choose_query_kernel()
    assert backend.choose_query_kernel() is choice  # once per load
    status = backend.query_kernel_status()
    assert status["kernel"] == choice.kernel and status["min_cosine"] >= 0.99
    document = backend.embed_documents([PINNED_SENTENCE])[0]
    query = backend.embed_query(PINNED_SENTENCE)
    if choice.int8:  # this machine's int8 kernel is faster: queries take it, stored texts never do
        assert float(np.dot(query, document)) >= query_kernel.MIN_COSINE
        assert not np.allclose(query, document, atol=1e-6)
        expected = _copy_vector(backend, minilm_models_dir, choice.reason, PINNED_SENTENCE)
        np.testing.assert_allclose(query, expected, atol=1e-5)
    else:  # no fast int8 kernel here: the float32 graph for queries too
        assert "not faster" in choice.reason
        np.testing.assert_allclose(query, document, atol=1e-6)
    backend.close()
    assert backend.query_kernel.kernel == choice.kernel  # the choice is kept; the sessions are dropped


#: A program that asks one query (which starts the background check) and ends without closing the model.
#: ``atexit`` runs after Python has joined the check's thread: it prints what the check had decided.
_ENDS_UNCLOSED = """
import atexit, sys, time
from pathlib import Path
from cpersona.embed.registry import load_manifest
from cpersona.embed.runtime import onnx_backend
if sys.argv[2] == "checking":
    onnx_backend.KERNEL_CHECK_DELAY_SECONDS = 0.0
backend = onnx_backend.OnnxBackend(load_manifest("all-minilm-l6-v2"), Path(sys.argv[1]) / "all-minilm-l6-v2")
backend.load()
backend.embed_query("what did we decide about the schema?")
atexit.register(lambda: print(backend.query_kernel.reason, flush=True))
while sys.argv[2] == "checking" and "onnx" not in sys.modules:  # the check is building its first copy
    time.sleep(0.005)
"""


@pytest.mark.slow
@pytest.mark.parametrize("ending_while", ["waiting", "checking"])
def test_a_program_that_ends_without_closing_the_model_stops_the_check(
    minilm_models_dir: Path, ending_while: str
) -> None:
    # Python joins a non-daemon thread before it runs atexit: a program that ended during the check's
    # wait used to wait it out and then run the whole check (seconds) before it could exit.
    ended = subprocess.run(
        [sys.executable, "-c", _ENDS_UNCLOSED, str(minilm_models_dir), ending_while],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ended.returncode == 0 and "terminate called" not in ended.stderr, ended.stderr
    expected = query_kernel.NOT_CHECKED if ending_while == "waiting" else query_kernel.STOPPED
    assert ended.stdout.strip() == expected


def test_exact_setting_keeps_queries_on_the_float32_graph(minilm_models_dir: Path) -> None:
    backend = _backend(minilm_models_dir, "exact")
    choice = backend.choose_query_kernel()
    assert choice.kernel == "exact" and "CPERSONA_EMBED_QUERY_KERNEL=exact" in choice.reason
    np.testing.assert_allclose(
        backend.embed_query(PINNED_SENTENCE), backend.embed_documents([PINNED_SENTENCE])[0], atol=1e-6
    )


def test_stats_say_which_kernel_embeds_queries(tmp_path: Path, minilm_models_dir: Path) -> None:
    settings = Settings(
        db_path=tmp_path / "memory.db",
        embedding_mode="onnx",
        models_dir=minilm_models_dir,
        embedding_model=MINILM,
        model_sharing="off",
    )
    with Memory(settings) as mem:
        assert mem.wait_until_ready(60)
        backend = mem.embeddings.backend
        assert isinstance(backend, OnnxBackend)
        choice = backend.choose_query_kernel()
        kernel = mem.stats()["embedding"]["query_kernel"]
        assert kernel == choice.as_dict()
        assert kernel["kernel"] in {"int8", "exact"} and kernel["reason"]


def test_without_the_u8s8_copy_the_per_block_copy_is_checked(
    minilm_models_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A runtime that cannot build or run the u8s8 copy (int8_outliers.py) falls back to the per-block one."""
    monkeypatch.setattr(int8_copies, "outlier_copy", lambda *args: None)
    backend = _backend(minilm_models_dir)
    choice = backend.choose_query_kernel()
    if choice.int8:
        assert "per-block" in choice.reason
        expected = _copy_vector(backend, minilm_models_dir, choice.reason, PINNED_SENTENCE)
        np.testing.assert_allclose(backend.embed_query(PINNED_SENTENCE), expected, atol=1e-5)
    else:
        assert "not faster" in choice.reason
    backend.close()


def test_forced_int8_queries_take_an_outlier_copy_on_any_machine(minilm_models_dir: Path) -> None:
    """CPERSONA_EMBED_QUERY_KERNEL=int8: the timed part of the check is skipped, so the int8 path is
    asserted whatever this machine's speed (the auto tests above only check it when it is faster). The
    u8s8 copy where it agrees, else the u8u8 one (exact integer sums on every CPU)."""
    backend = _backend(minilm_models_dir, "int8")
    choice = backend.choose_query_kernel()
    assert choice.int8 and "CPERSONA_EMBED_QUERY_KERNEL=int8" in choice.reason
    assert "(u8s8 products" in choice.reason or "(u8u8 products" in choice.reason, choice.reason
    assert choice.min_cosine is not None and choice.min_cosine >= query_kernel.MIN_COSINE
    document = backend.embed_documents([PINNED_SENTENCE])[0]
    query = backend.embed_query(PINNED_SENTENCE)
    assert float(np.dot(query, document)) >= query_kernel.MIN_COSINE
    assert not np.allclose(query, document, atol=1e-6)  # int8 arithmetic, not the float32 graph
    expected = _copy_vector(backend, minilm_models_dir, choice.reason, PINNED_SENTENCE)
    np.testing.assert_allclose(query, expected, atol=1e-5)
    np.testing.assert_allclose(backend.embed_documents([PINNED_SENTENCE])[0], document, atol=1e-6)
    backend.close()


def test_forced_int8_falls_back_to_the_per_block_copy(
    minilm_models_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(int8_copies, "outlier_copy", lambda *args: None)
    backend = _backend(minilm_models_dir, "int8")
    choice = backend.choose_query_kernel()
    assert choice.int8 and "per-block" in choice.reason
    expected = _copy_vector(backend, minilm_models_dir, choice.reason, PINNED_SENTENCE)
    np.testing.assert_allclose(backend.embed_query(PINNED_SENTENCE), expected, atol=1e-5)
    backend.close()


def test_without_the_u8s8_copy_the_u8u8_copy_is_checked_next(
    minilm_models_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As on a CPU whose u8s8 products saturate (no VNNI): the same weights shifted to uint8 come next,
    before the per-block copy, and agree on every CPU."""
    kinds = _record_outlier_copies(monkeypatch, without="u8s8")
    monkeypatch.setattr(int8_outliers, "cpu_flags", lambda: None)  # the order of a VNNI CPU, on any CPU
    backend = _backend(minilm_models_dir, "int8")
    choice = backend.choose_query_kernel()
    assert kinds == ["u8s8", "u8u8"]
    assert choice.int8 and choice.reason.endswith(
        f"(u8u8 products, {int8_outliers.OUTLIERS} outlier columns in float)"
    )
    assert choice.min_cosine is not None and choice.min_cosine >= query_kernel.MIN_COSINE
    expected = _copy_vector(backend, minilm_models_dir, choice.reason, PINNED_SENTENCE)
    np.testing.assert_allclose(backend.embed_query(PINNED_SENTENCE), expected, atol=1e-5)
    backend.close()


def test_on_a_cpu_without_vnni_the_backend_tries_the_u8u8_copy_first(
    minilm_models_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kinds = _record_outlier_copies(monkeypatch)
    monkeypatch.setattr(int8_outliers, "cpu_flags", lambda: frozenset({"avx2", "fma"}))
    backend = _backend(minilm_models_dir, "int8")
    choice = backend.choose_query_kernel()
    assert kinds == ["u8u8"]  # agrees on every CPU: the u8s8 copy is never built
    assert choice.int8 and choice.reason.endswith(
        f"(u8u8 products, {int8_outliers.OUTLIERS} outlier columns in float)"
    )
    backend.close()


def test_forced_int8_still_refuses_a_copy_that_disagrees() -> None:
    # Agreement is never skipped: only the timing is.
    choice = query_kernel.decide(0.9, 0.0, forced=True)
    assert choice.kernel == "exact" and "differ too much" in choice.reason


def test_an_untimed_copy_is_never_chosen_unless_forced() -> None:
    untimed = query_kernel.decide(0.999, None)
    assert untimed.kernel == "exact" and "not timed" in untimed.reason and untimed.speedup is None
    assert query_kernel.decide(0.9, None).reason.startswith("the int8 copy's vectors differ too much")


def test_without_onnx_queries_use_the_float32_graph_and_say_how_to_add_the_kernel(
    minilm_models_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An install without the fast-query extra (no ``onnx``): the check keeps the float32 graph, names the
    extra, and queries embed exactly as stored texts do. ``sys.modules[name] = None`` is how Python itself
    marks a module as unimportable: every ``import onnx`` raises ImportError, as on such an install."""
    monkeypatch.setitem(sys.modules, "onnx", None)
    assert not query_kernel.onnx_installed()
    assert "cpersona-embedded[fast-query]" in query_kernel.expected("auto")
    backend = _backend(minilm_models_dir)
    choice = backend.choose_query_kernel()
    assert choice.kernel == "exact" and choice.reason == query_kernel.NO_ONNX
    assert backend.query_kernel_status() == {"kernel": "exact", "reason": query_kernel.NO_ONNX}
    np.testing.assert_allclose(
        backend.embed_query(PINNED_SENTENCE), backend.embed_documents([PINNED_SENTENCE])[0], atol=1e-6
    )
    backend.close()


def test_expected_kernel_names_each_case() -> None:
    assert query_kernel.onnx_installed()  # the test extra carries onnx
    assert "int8 copy, checked after the first recall" in query_kernel.expected("auto")
    assert "int8 copy, checked after the first recall" in query_kernel.expected("int8")
    assert query_kernel.expected("exact") == "float32 graph only (CPERSONA_EMBED_QUERY_KERNEL=exact)"
