"""One model per machine: election, the Unix-socket client, takeover, stale sockets, mismatches.

Two ``SharedModelBackend`` objects in one process conflict over the flock exactly like two
processes (each opens its own file description), so most cases run in-process with the real
MiniLM (or the tiny jina graph, which has query/document prompts). A subprocess checks that a
client never imports ONNX Runtime.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from model_fixtures import MINILM, tiny_jina_manifest

from cpersona.config import Settings
from cpersona.embed.registry import load_manifest
from cpersona.embed.runtime.base import EmbeddingFault, FaultKind
from cpersona.embed.runtime.embed_server import UnixEmbedServer
from cpersona.embed.runtime.factory import create_backend
from cpersona.embed.runtime.onnx_backend import OnnxBackend
from cpersona.embed.runtime.rendezvous import HostLock, Rendezvous, RendezvousError, sharing_key
from cpersona.embed.runtime.shared_backend import CLIENT, HOST, SharedModelBackend


def minilm_shared(models: Path, run_dir: Path, kernel: str = "auto", **kwargs: Any) -> SharedModelBackend:
    inner = OnnxBackend(load_manifest(MINILM), models / MINILM, query_kernel=kernel)
    key = sharing_key(
        inner.model_path, MINILM, inner.dimension, int(inner.max_tokens), os.getuid(), query_kernel=kernel
    )
    rendezvous = Rendezvous(run_dir, key)
    rendezvous.check()
    return SharedModelBackend(inner, rendezvous, **kwargs)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return tmp_path / "run"


def test_first_loader_hosts_and_the_second_uses_its_model(minilm_models_dir: Path, run_dir: Path) -> None:
    first = minilm_shared(minilm_models_dir, run_dir)
    second = minilm_shared(minilm_models_dir, run_dir)
    try:
        first.load()
        second.load()
        assert (first.role, second.role) == (HOST, CLIENT)
        assert second.host_pid == os.getpid()
        assert first.inner.loaded and not second.inner.loaded  # the client never loaded a model
        assert Path(first.socket_path).exists()
        texts = ["The cat sits on the mat.", "Quarterly revenue grew by eight percent."] * 20  # > 32: chunks
        np.testing.assert_allclose(second.embed_documents(texts), first.embed_documents(texts), atol=1e-6)
        np.testing.assert_allclose(second.embed_query("a kitten"), first.embed_query("a kitten"), atol=1e-6)
        assert second.embed_documents([]).shape == (0, 384)
    finally:
        second.close()
        first.close()
    assert not Path(first.socket_path).exists()


def test_each_process_is_answered_from_its_own_recent_query_vectors(
    minilm_models_dir: Path, run_dir: Path
) -> None:
    # Exact queries: no kernel switch (which clears the cache) can happen while the counts are read.
    host = minilm_shared(minilm_models_dir, run_dir, kernel="exact")
    other = minilm_shared(minilm_models_dir, run_dir, kernel="exact", asker="another process")
    try:
        host.load()
        other.load()
        assert other.role == CLIENT
        cache = host.inner.query_cache
        first = host.embed_query("Where does the deploy runbook live?")
        misses = cache.misses
        # The same question from another server is computed for it, not answered from the host's cache:
        # each server's recall costs what it would cost alone.
        np.testing.assert_array_equal(other.embed_query("Where does the deploy runbook live?"), first)
        assert (cache.misses, cache.hits) == (misses + 1, 0)
        other.embed_query("Where does the deploy runbook live?")
        host.embed_query("Where does the deploy runbook live?")
        assert cache.hits == 2  # each asked again: each from its own
    finally:
        other.close()
        host.close()


def test_the_query_role_reaches_the_host(tiny_jina_models_dir: Path, run_dir: Path) -> None:
    # jina has a query prompt and a document prompt: the client's query must get the query one.
    manifest = tiny_jina_manifest()
    rendezvous = Rendezvous(run_dir, "tinyjina")
    rendezvous.check()
    host = SharedModelBackend(OnnxBackend(manifest, tiny_jina_models_dir / manifest.name), rendezvous)
    client = SharedModelBackend(OnnxBackend(manifest, tiny_jina_models_dir / manifest.name), rendezvous)
    try:
        host.load()
        client.load()
        assert client.role == CLIENT
        text = "the cat sits on the mat"
        as_query = client.embed_query(text)
        np.testing.assert_allclose(as_query, host.inner.embed([text], "query")[0], atol=1e-6)
        np.testing.assert_allclose(client.embed_documents([text])[0], host.inner.embed([text])[0], atol=1e-6)
        assert float(np.dot(as_query, client.embed_documents([text])[0])) < 0.9999
    finally:
        client.close()
        host.close()


def test_a_client_takes_the_model_over_when_the_host_closes(minilm_models_dir: Path, run_dir: Path) -> None:
    host = minilm_shared(minilm_models_dir, run_dir)
    client = minilm_shared(minilm_models_dir, run_dir)
    try:
        host.load()
        client.load()
        before = client.embed_query("where is the cat")
        host.close()
        after = client.embed_query("where is the cat")  # the request waits for the takeover load
        assert client.role == HOST and client.takeovers == 1
        np.testing.assert_allclose(after, before, atol=1e-6)
        # The former host comes back as a client of the new one.
        host.load()
        assert host.role == CLIENT
        np.testing.assert_allclose(host.embed_query("where is the cat"), before, atol=1e-6)
    finally:
        host.close()
        client.close()


def test_concurrent_loaders_elect_exactly_one_host(minilm_models_dir: Path, run_dir: Path) -> None:
    backends = [minilm_shared(minilm_models_dir, run_dir) for _ in range(3)]
    errors: list[BaseException] = []

    def load(backend: SharedModelBackend) -> None:
        try:
            backend.load()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=load, args=(b,)) for b in backends]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert errors == []
        assert sorted(b.role for b in backends) == [CLIENT, CLIENT, HOST]
        vectors = [b.embed_query("racing") for b in backends]
        for vector in vectors[1:]:
            np.testing.assert_allclose(vector, vectors[0], atol=1e-6)
    finally:
        for backend in backends:
            backend.close()


def test_a_stale_socket_file_is_replaced(minilm_models_dir: Path, run_dir: Path) -> None:
    backend = minilm_shared(minilm_models_dir, run_dir)
    # A dead host's socket: the file exists, nothing listens (connect is refused).
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(backend.socket_path)
    dead.close()
    with pytest.raises(ConnectionRefusedError):
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(backend.socket_path)
        finally:
            probe.close()
    other = minilm_shared(minilm_models_dir, run_dir)
    try:
        backend.load()
        assert backend.role == HOST
        other.load()
        assert other.role == CLIENT
        assert other.embed_query("stale").shape == (384,)
    finally:
        other.close()
        backend.close()


def test_a_removed_runtime_dir_is_recreated(minilm_models_dir: Path, run_dir: Path) -> None:
    import shutil

    backend = minilm_shared(minilm_models_dir, run_dir)
    shutil.rmtree(run_dir)  # e.g. a session manager cleaning XDG_RUNTIME_DIR
    try:
        backend.load()
        assert backend.role == HOST and (run_dir.stat().st_mode & 0o777) == 0o700
    finally:
        backend.close()


def test_a_held_lock_without_a_socket_is_an_unreachable_fault(minilm_models_dir: Path, run_dir: Path) -> None:
    backend = minilm_shared(minilm_models_dir, run_dir, load_wait=0.3)
    holder = HostLock(backend.rendezvous.lock_path)
    assert holder.acquire()
    try:
        with pytest.raises(EmbeddingFault) as caught:
            backend.load()
        assert caught.value.kind == FaultKind.ENDPOINT_UNREACHABLE
        assert backend.socket_path in caught.value.evidence
        assert "CPERSONA_MODEL_SHARING=off" in caught.value.runbook
        assert backend.role == ""
    finally:
        holder.release()
    backend.load()  # the holder left: the retry path ends as host
    try:
        assert backend.role == HOST
    finally:
        backend.close()


def test_a_host_serving_another_model_is_refused(
    minilm_models_dir: Path, tiny_jina_models_dir: Path, run_dir: Path
) -> None:
    backend = minilm_shared(minilm_models_dir, run_dir)
    manifest = tiny_jina_manifest()
    impostor = OnnxBackend(manifest, tiny_jina_models_dir / manifest.name)
    impostor.load()
    holder = HostLock(backend.rendezvous.lock_path)
    assert holder.acquire()
    server = UnixEmbedServer(backend.socket_path, impostor)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        with pytest.raises(EmbeddingFault) as caught:
            backend.load()
        assert caught.value.kind == FaultKind.MISCONFIGURED
        assert "jina-v5-nano" in caught.value.evidence and MINILM in caught.value.evidence
    finally:
        server.shutdown()
        server.server_close()
        holder.release()
        impostor.close()


def test_the_unix_server_answers_bad_requests_with_400(minilm_models_dir: Path, run_dir: Path) -> None:
    from cpersona.embed.runtime.rendezvous import UnixHTTPConnection

    host = minilm_shared(minilm_models_dir, run_dir)
    try:
        host.load()
        for body, fragment in (
            ({"texts": ["x"], "role": "summary"}, "role"),
            ({"texts": []}, "at least one"),
            ({"texts": ["x"] * 33}, "at most 32"),
        ):
            conn = UnixHTTPConnection(host.socket_path, 10)
            conn.request(
                "POST", "/embed", body=json.dumps(body), headers={"Content-Type": "application/json"}
            )
            response = conn.getresponse()
            assert response.status == 400
            assert fragment in json.loads(response.read())["error"]
            conn.close()
        conn = UnixHTTPConnection(host.socket_path, 10)
        conn.request("GET", "/health")
        health = json.loads(conn.getresponse().read())
        conn.close()
        assert health == {
            "status": "ok",
            "model": MINILM,
            "dimension": 384,
            "roles": ["document", "query"],
            "pid": os.getpid(),
        }
    finally:
        host.close()


def test_the_factory_shares_unless_told_not_to(minilm_models_dir: Path, run_dir: Path) -> None:
    base = Settings(models_dir=minilm_models_dir, embedding_model=MINILM, runtime_dir=run_dir)
    assert isinstance(create_backend(base), SharedModelBackend)
    assert (run_dir.stat().st_mode & 0o777) == 0o700
    assert type(create_backend(base.with_overrides(model_sharing="off"))) is OnnxBackend
    # Different cut or token cap: a different rendezvous (their vectors differ).
    a = create_backend(base)
    b = create_backend(base.with_overrides(embed_max_tokens=64))
    assert isinstance(a, SharedModelBackend) and isinstance(b, SharedModelBackend)
    assert a.rendezvous.key != b.rendezvous.key


def test_a_process_set_to_exact_queries_is_never_served_by_an_auto_host(
    minilm_models_dir: Path, run_dir: Path
) -> None:
    """A client's queries are embedded by its host, so the query-kernel setting is part of the key."""
    base = Settings(models_dir=minilm_models_dir, embedding_model=MINILM, runtime_dir=run_dir)
    auto = create_backend(base)
    exact = create_backend(base.with_overrides(embed_query_kernel="exact"))
    exact_too = create_backend(base.with_overrides(embed_query_kernel="exact"))
    private = OnnxBackend(load_manifest(MINILM), minilm_models_dir / MINILM, query_kernel="exact")
    assert isinstance(auto, SharedModelBackend) and isinstance(exact, SharedModelBackend)
    assert isinstance(exact_too, SharedModelBackend)
    try:
        auto.load()
        auto.choose_query_kernel()  # the auto host may now embed queries with int8 products
        exact.load()
        exact_too.load()
        private.load()
        assert (auto.role, exact.role, exact_too.role) == (HOST, HOST, CLIENT)
        question = "which port does the staging database use now?"
        np.testing.assert_allclose(exact_too.embed_query(question), private.embed_query(question), atol=1e-6)
        np.testing.assert_allclose(exact.embed_query(question), private.embed_query(question), atol=1e-6)
    finally:
        for backend in (exact_too, exact, auto, private):
            backend.close()


def test_an_unsafe_runtime_dir_falls_back_to_a_private_model(minilm_models_dir: Path, tmp_path: Path) -> None:
    open_dir = tmp_path / "open"
    open_dir.mkdir(mode=0o755)
    open_dir.chmod(0o755)
    with pytest.raises(RendezvousError, match="open to other users"):
        Rendezvous(open_dir, "k").check()
    settings = Settings(models_dir=minilm_models_dir, embedding_model=MINILM, runtime_dir=open_dir)
    assert type(create_backend(settings)) is OnnxBackend
    long_dir = tmp_path / ("x" * 120)
    with pytest.raises(RendezvousError, match="AF_UNIX"):
        Rendezvous(long_dir, "k").check()
    assert type(create_backend(settings.with_overrides(runtime_dir=long_dir))) is OnnxBackend


def test_settings_read_model_sharing_and_the_runtime_dir(tmp_path: Path) -> None:
    assert Settings.from_env({}).model_sharing == "auto"
    assert Settings.from_env({"CPERSONA_MODEL_SHARING": "OFF"}).model_sharing == "off"
    assert Settings.from_env({"XDG_RUNTIME_DIR": str(tmp_path)}).runtime_dir == tmp_path / "cpersona"
    assert Settings.from_env({}).runtime_dir.name == f"cpersona-{os.getuid()}"
    from cpersona.config import ConfigError

    with pytest.raises(ConfigError, match="CPERSONA_MODEL_SHARING"):
        Settings.from_env({"CPERSONA_MODEL_SHARING": "sometimes"})


CLIENT_SCRIPT = """
import json, sys
from pathlib import Path
from cpersona.config import Settings
from cpersona.embed.runtime.factory import create_backend
settings = Settings(models_dir=Path(sys.argv[1]), embedding_model="all-minilm-l6-v2", runtime_dir=Path(sys.argv[2]))
backend = create_backend(settings)
backend.load()
vector = backend.embed_query("a kitten is resting on a rug")
print(json.dumps({"role": backend.role, "onnxruntime": "onnxruntime" in sys.modules,
                  "tokenizers": "tokenizers" in sys.modules, "vector": vector.tolist()}))
backend.close()
"""


def test_a_client_process_never_imports_the_runtime(minilm_models_dir: Path, run_dir: Path) -> None:
    host = minilm_shared(minilm_models_dir, run_dir)
    try:
        host.load()
        # The client process starts in ~1-3 s: settle the host's query kernel so that its answer to the
        # client and to the comparison below come from one graph (docs/models.md#the-query-kernel).
        host.choose_query_kernel()
        done = subprocess.run(
            [sys.executable, "-c", CLIENT_SCRIPT, str(minilm_models_dir), str(run_dir)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout)
        assert answer["role"] == CLIENT
        assert answer["onnxruntime"] is False and answer["tokenizers"] is False
        np.testing.assert_allclose(
            answer["vector"], host.embed_query("a kitten is resting on a rug"), atol=1e-6
        )
    finally:
        host.close()


def test_two_memories_share_one_model_and_say_so(minilm_models_dir: Path, tmp_path: Path) -> None:
    from cpersona.memory import Memory

    settings = Settings(
        db_path=tmp_path / "memory.db",
        models_dir=minilm_models_dir,
        embedding_model=MINILM,
        runtime_dir=tmp_path / "run",
        update_check=False,
        auto_fetch_model=False,
        operating_context_path=tmp_path / "operating-context.toml",
    )
    with (
        Memory(settings, start_background=False) as first,
        Memory(settings, start_background=False) as second,
    ):
        assert first.embeddings.try_load() and second.embeddings.try_load()
        one, two = first.embedding_status(), second.embedding_status()
        assert (one["sharing"]["role"], two["sharing"]["role"]) == (HOST, CLIENT)
        assert one["sharing"]["host_pid"] == two["sharing"]["host_pid"] == os.getpid()
        assert one["sharing"]["socket"] == two["sharing"]["socket"]
        stored = second.store("shared", "The cat sits on the mat.")
        assert stored["embedded"] is True
        best = first.recall("shared", "A kitten is resting on a rug")["results"][-1]
        assert best["id"] == stored["id"] and best["match_reason"].get("cosine") is not None
        first.close()  # the host leaves: the second takes over on its next embedding
        recalled = second.recall("shared", "A kitten is resting on a rug")
        assert recalled["results"][-1]["match_reason"].get("cosine") is not None
        assert second.embedding_status()["sharing"] == {
            "role": HOST,
            "host_pid": os.getpid(),
            "socket": two["sharing"]["socket"],
            "takeovers": 1,
        }


def test_a_client_embeds_a_long_memorys_blocks_through_the_host(
    minilm_models_dir: Path, run_dir: Path, tmp_path: Path
) -> None:
    # docs/retrieval.md#long-records: the window comes from the shared model's manifest, the block
    # texts are embedded by the host like any document text.
    from long_answer import LONG

    from cpersona.embed.runtime.blocks import block_spans
    from cpersona.memory import Memory
    from cpersona.storage.vectors import from_blob

    host = minilm_shared(minilm_models_dir, run_dir)
    client = minilm_shared(minilm_models_dir, run_dir)
    try:
        host.load()
        client.load()
        assert client.role == CLIENT and client.window_tokens == 256
        settings = Settings(
            db_path=tmp_path / "memory.db",
            embedding_mode="onnx",
            models_dir=minilm_models_dir,
            embedding_model=MINILM,
            update_check=False,
            auto_fetch_model=False,
        )
        with Memory(settings, backend=client, start_background=False) as mem:
            assert mem.embeddings.try_load()
            stored = mem.store("a", LONG)
            with mem.storage.read() as s:
                blocks = s.memories.blocks_of([stored["id"]], client.model_id, client.dimension)
        spans = block_spans(LONG, 256)
        assert [(b.index, b.start, b.end) for b in blocks] == spans and spans
        expected = host.embed_documents([LONG[s:e] for _, s, e in spans])
        np.testing.assert_allclose(np.stack([from_blob(b.embedding) for b in blocks]), expected, atol=1e-5)
    finally:
        client.close()
        host.close()


HOST_SCRIPT = """
import sys
from pathlib import Path
from cpersona.config import Settings
from cpersona.embed.runtime.factory import create_backend
settings = Settings(models_dir=Path(sys.argv[1]), embedding_model="all-minilm-l6-v2", runtime_dir=Path(sys.argv[2]))
backend = create_backend(settings)
backend.load()
print(backend.role, flush=True)
sys.stdin.readline()  # the clients' requests are running now
if sys.argv[3] == "close":
    backend.close()
# else: the program simply ends, its backend never closed
"""


@pytest.mark.slow
@pytest.mark.parametrize("ending", ["close", "plain exit"])
def test_a_host_that_stops_while_serving_exits_cleanly(
    minilm_models_dir: Path, run_dir: Path, ending: str
) -> None:
    # Handler threads are daemons: a host that ended while one of them was inside ONNX Runtime aborted
    # ("terminate called without an active exception", exit status -6). It must first let them finish.
    host = subprocess.Popen(
        [sys.executable, "-c", HOST_SCRIPT, str(minilm_models_dir), str(run_dir), ending.split()[0]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert host.stdout is not None and host.stdin is not None
    assert host.stdout.readline().strip() == HOST
    clients = [minilm_shared(minilm_models_dir, run_dir) for _ in range(3)]
    answered: list[int] = []
    in_flight = threading.Barrier(len(clients) + 1)
    stop = threading.Event()

    def keep_asking(client: SharedModelBackend) -> None:
        texts = [f"{'word ' * 200}{i}" for i in range(8)]  # long: each request keeps the host busy
        client.embed_documents(texts[:1])
        in_flight.wait()
        while not stop.is_set():
            answered.append(len(client.embed_documents(texts)))

    threads = [threading.Thread(target=keep_asking, args=(client,)) for client in clients]
    for thread in threads:
        thread.start()
    try:
        in_flight.wait(timeout=60)
        host.stdin.write("stop\n")
        host.stdin.flush()
        _, err = host.communicate(timeout=120)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
        for client in clients:
            client.close()
    assert host.returncode == 0, err
    assert "terminate called" not in err and "onnxruntime" not in err, err
    # The clients lost nothing: one of them took the model over and answered the rest.
    assert answered and set(answered) == {8}
    assert sum(client.takeovers for client in clients) == 1
