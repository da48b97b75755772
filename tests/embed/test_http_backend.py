"""The http backend against the real embed server (MiniLM) and against a closed loopback port."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pytest
from model_fixtures import MINILM, free_loopback_port, tiny_jina_manifest

from cpersona.config import Settings
from cpersona.embed.registry import load_manifest
from cpersona.embed.runtime.base import EmbeddingBackend, EmbeddingFault, FaultKind
from cpersona.embed.runtime.embed_server import EmbedHTTPServer, start_embed_server
from cpersona.embed.runtime.factory import MisconfiguredBackend, create_backend
from cpersona.embed.runtime.http_backend import HttpBackend, normalise_url
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.embed.runtime.onnx_backend import OnnxBackend
from cpersona.embed.runtime.shared_backend import SharedModelBackend


@pytest.fixture(scope="module")
def minilm_server(minilm_backend: OnnxBackend) -> Iterator[EmbedHTTPServer]:
    srv, thread = start_embed_server(minilm_backend, "127.0.0.1", 0)
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(5)


class ScaledBackend(EmbeddingBackend):
    """A peer that returns vectors of length 3 (not unit length), to check normalisation."""

    mode = "test"

    def load(self) -> None:
        return None

    @property
    def model_id(self) -> str:
        return "scaled"

    @property
    def dimension(self) -> int:
        return 2

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.array([[3.0, 0.0] for _ in texts], dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def test_same_vectors_as_in_process(minilm_server: EmbedHTTPServer, minilm_backend: OnnxBackend) -> None:
    backend = HttpBackend(minilm_server.url + "/embed", timeout=10)
    backend.load()
    assert backend.dimension == 384 and backend.model_id == "http:all-minilm-l6-v2"
    texts = ["The cat sits on the mat", "A kitten is resting on a rug", "Quarterly revenue"]
    np.testing.assert_allclose(
        backend.embed_documents(texts), minilm_backend.embed_documents(texts), atol=1e-5
    )
    np.testing.assert_allclose(backend.embed_query("cat"), minilm_backend.embed_query("cat"), atol=1e-5)


def test_queries_carry_the_query_role(tiny_jina_models_dir) -> None:  # type: ignore[no-untyped-def]
    # jina has a query prompt: over HTTP the query vector must be the in-process query vector.
    manifest = tiny_jina_manifest()
    local = OnnxBackend(manifest, tiny_jina_models_dir / manifest.name)
    local.load()
    srv, thread = start_embed_server(local, "127.0.0.1", 0)
    try:
        backend = HttpBackend(srv.url, timeout=10)
        text = "the cat sits on the mat"
        np.testing.assert_allclose(backend.embed_query(text), local.embed([text], "query")[0], atol=1e-5)
        np.testing.assert_allclose(backend.embed_documents([text])[0], local.embed([text])[0], atol=1e-5)
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(5)
        local.close()


def test_large_lists_are_split_into_requests_of_32(minilm_server: EmbedHTTPServer) -> None:
    backend = HttpBackend(minilm_server.url, timeout=10)  # bare base URL: /embed is appended
    backend.load()
    sent_before = backend.requests_sent
    texts = [f"memory number {i}" for i in range(70)]
    vectors = backend.embed_documents(texts)
    assert vectors.shape == (70, 384)
    assert backend.requests_sent - sent_before == 3  # 32 + 32 + 6
    np.testing.assert_allclose(vectors[65], backend.embed_documents([texts[65]])[0], atol=1e-5)


def test_vectors_are_normalised_when_the_server_does_not() -> None:
    srv, thread = start_embed_server(ScaledBackend(), "127.0.0.1", 0)
    try:
        backend = HttpBackend(srv.url + "/embed", timeout=10)
        vectors = backend.embed_documents(["a", "b"])
        np.testing.assert_allclose(vectors, [[1.0, 0.0], [1.0, 0.0]])
        assert vectors.dtype == np.float32 and backend.model_id == "http:scaled"
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(5)


def test_closed_port_is_endpoint_unreachable() -> None:
    url = f"http://127.0.0.1:{free_loopback_port()}/embed"
    backend = HttpBackend(url, timeout=5)
    with pytest.raises(EmbeddingFault) as info:
        backend.load()
    assert info.value.kind == FaultKind.ENDPOINT_UNREACHABLE and url in info.value.evidence


def test_wrong_path_is_misconfigured(minilm_server: EmbedHTTPServer) -> None:
    with pytest.raises(EmbeddingFault) as info:
        HttpBackend(minilm_server.url + "/v1/other", timeout=5).load()
    assert info.value.kind == FaultKind.MISCONFIGURED and "404" in info.value.evidence


def test_no_url_is_misconfigured() -> None:
    with pytest.raises(EmbeddingFault) as info:
        HttpBackend(None).load()
    assert info.value.kind == FaultKind.MISCONFIGURED and "CPERSONA_EMBEDDING_URL" in info.value.evidence


def test_normalise_url() -> None:
    assert normalise_url("http://127.0.0.1:8403") == "http://127.0.0.1:8403/embed"
    assert normalise_url("http://127.0.0.1:8403/") == "http://127.0.0.1:8403/embed"
    assert normalise_url("http://h:1/custom/embed") == "http://h:1/custom/embed"


# -- factory -------------------------------------------------------------------------------------


def test_factory_modes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert isinstance(create_backend(Settings(embedding_mode="none")), NoEmbeddings)
    http = create_backend(
        Settings(embedding_mode="http", embedding_url="http://127.0.0.1:1", embedding_timeout=3)
    )
    assert isinstance(http, HttpBackend) and http.timeout == 3
    onnx_settings = Settings(
        models_dir=tmp_path,
        embedding_model="all-minilm-l6-v2",
        embedding_dim=None,
        runtime_dir=tmp_path / "run",
    )
    shared = create_backend(onnx_settings)
    # Shared by default (one copy per machine); the wrapped backend is the ordinary in-process one.
    assert isinstance(shared, SharedModelBackend) and shared.mode == "onnx"
    assert isinstance(shared.inner, OnnxBackend) and shared.inner.model_path == tmp_path / "all-minilm-l6-v2"
    onnx = create_backend(onnx_settings.with_overrides(model_sharing="off"))
    assert isinstance(onnx, OnnxBackend) and onnx.model_path == tmp_path / "all-minilm-l6-v2"


def test_factory_unknown_model_faults_on_load(tmp_path) -> None:  # type: ignore[no-untyped-def]
    backend = create_backend(Settings(models_dir=tmp_path, embedding_model="no-such-model"))
    assert isinstance(backend, MisconfiguredBackend) and backend.mode == "onnx"
    with pytest.raises(EmbeddingFault) as info:
        backend.load()
    assert info.value.kind == FaultKind.MISCONFIGURED and "jina-v5-nano" in info.value.runbook


def test_factory_onnx_backend_loads_installed_model(minilm_models_dir) -> None:  # type: ignore[no-untyped-def]
    backend = create_backend(Settings(models_dir=minilm_models_dir, embedding_model="all-minilm-l6-v2"))
    backend.load()
    assert backend.embed_query("hello").shape == (384,)
    backend.close()


class OtherModel(ScaledBackend):
    """Another model of the same dimension, as a server restarted with another model would serve."""

    @property
    def model_id(self) -> str:
        return "other"

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.array([[0.0, 3.0] for _ in texts], dtype=np.float32)


def test_a_repeated_query_is_answered_without_a_request(minilm_server: EmbedHTTPServer) -> None:
    backend = HttpBackend(minilm_server.url, timeout=10)
    first = backend.embed_query("Where does the deploy runbook live?")
    sent = backend.requests_sent
    again = backend.embed_query("Where does the deploy runbook live?")
    assert backend.requests_sent == sent  # answered from the kept vector
    np.testing.assert_array_equal(again, first)
    backend.embed_query("another question")
    assert backend.requests_sent == sent + 1
    for size, ttl in ((0, 300.0), (256, 0.0)):  # no cache; a lifetime of 0 s
        uncached = HttpBackend(minilm_server.url, timeout=10, query_cache_size=size, query_cache_ttl=ttl)
        uncached.embed_query("Where does the deploy runbook live?")
        sent = uncached.requests_sent
        uncached.embed_query("Where does the deploy runbook live?")
        assert uncached.requests_sent == sent + 1


def test_two_clients_of_one_server_are_not_answered_from_each_others_queries(minilm_models_dir) -> None:  # type: ignore[no-untyped-def]
    # Exact queries: no kernel switch (which clears the server's cache) can happen while the counts are read.
    served = OnnxBackend(load_manifest(MINILM), minilm_models_dir / MINILM, query_kernel="exact")
    served.load()
    srv, thread = start_embed_server(served, "127.0.0.1", 0)
    try:
        first = HttpBackend(srv.url, timeout=10)  # named by its pid, as a server is
        second = HttpBackend(srv.url, timeout=10, asker="another server")
        question = "Where does the deploy runbook live?"
        vector = first.embed_query(question)
        misses, hits = served.query_cache.misses, served.query_cache.hits
        np.testing.assert_array_equal(second.embed_query(question), vector)
        # computed for the second client, not answered from the first one's recent query
        assert (served.query_cache.misses, served.query_cache.hits) == (misses + 1, hits)
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(5)
        served.close()


def test_a_reply_naming_another_model_forgets_the_kept_query_vectors() -> None:
    first_srv, first_thread = start_embed_server(ScaledBackend(), "127.0.0.1", 0)
    second_srv, second_thread = start_embed_server(OtherModel(), "127.0.0.1", 0)
    try:
        backend = HttpBackend(first_srv.url, timeout=10)
        np.testing.assert_allclose(backend.embed_query("q"), [1.0, 0.0])
        backend.url = normalise_url(second_srv.url)  # the server behind the address changed its model
        np.testing.assert_allclose(backend.embed_query("q"), [1.0, 0.0])  # no reply seen yet: the TTL's case
        backend.embed_documents(["a stored text"])  # this reply names "other"
        np.testing.assert_allclose(backend.embed_query("q"), [0.0, 1.0])
    finally:
        for srv, thread in ((first_srv, first_thread), (second_srv, second_thread)):
            srv.shutdown()
            srv.server_close()
            thread.join(5)


def test_the_factory_sizes_the_remote_query_cache(tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings = Settings.from_env(
        {
            "CPERSONA_EMBEDDING_MODE": "http",
            "CPERSONA_EMBEDDING_URL": "http://127.0.0.1:9/embed",
            "CPERSONA_EMBEDDING_CACHE_SIZE": "8",
            "CPERSONA_EMBEDDING_CACHE_TTL": "5",
            "CPERSONA_DATA_DIR": str(tmp_path),
        }
    )
    backend = create_backend(settings)
    assert isinstance(backend, HttpBackend)
    assert backend.query_cache.size == 8 and backend.query_cache.ttl == 5.0
