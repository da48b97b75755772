"""embed-server: the /embed contract served from the in-process model."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from cpersona.embed.runtime.embed_server import EmbedHTTPServer, start_embed_server
from cpersona.embed.runtime.onnx_backend import OnnxBackend


@pytest.fixture(scope="module")
def server(minilm_backend: OnnxBackend) -> Iterator[EmbedHTTPServer]:
    srv, thread = start_embed_server(minilm_backend, "127.0.0.1", 0)
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(5)


def request(url: str, body: bytes | None = None, method: str = "POST") -> tuple[int, dict]:
    req = urllib.request.Request(url, data=body, method=method, headers={"Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_embed_returns_model_vectors(server: EmbedHTTPServer, minilm_backend: OnnxBackend) -> None:
    texts = ["The cat sits on the mat", "A kitten is resting on a rug"]
    status, payload = request(server.url + "/embed", json.dumps({"texts": texts}).encode())
    assert status == 200
    assert payload["model"] == "all-minilm-l6-v2" and payload["dimension"] == 384
    np.testing.assert_allclose(
        np.array(payload["embeddings"]), minilm_backend.embed_documents(texts), atol=1e-6
    )


def test_health(server: EmbedHTTPServer) -> None:
    status, payload = request(server.url + "/health", method="GET")
    assert status == 200 and payload == {
        "status": "ok",
        "model": "all-minilm-l6-v2",
        "dimension": 384,
        "roles": ["document", "query"],
        "pid": os.getpid(),
    }


def test_the_query_role_embeds_as_a_query(server: EmbedHTTPServer, minilm_backend: OnnxBackend) -> None:
    # MiniLM has no prompts, so query and document vectors agree; the role is accepted and checked.
    body = json.dumps({"texts": ["where is the cat", "the mat"], "role": "query"}).encode()
    status, payload = request(server.url + "/embed", body)
    assert status == 200
    expected = np.stack(
        [minilm_backend.embed_query("where is the cat"), minilm_backend.embed_query("the mat")]
    )
    np.testing.assert_allclose(np.array(payload["embeddings"]), expected, atol=1e-6)
    status, payload = request(server.url + "/embed", json.dumps({"texts": ["x"], "role": 3}).encode())
    assert status == 400 and "role" in payload["error"]


@pytest.mark.parametrize(
    "body, fragment",
    [
        (b"{not json", "not valid JSON"),
        (json.dumps({"texts": ["x"] * 33}).encode(), "at most 32"),
        (json.dumps({"texts": []}).encode(), "at least one"),
        (json.dumps({"texts": [1, 2]}).encode(), "texts"),
        (json.dumps(["a"]).encode(), "texts"),
        (json.dumps({"texts": ["x"], "role": "query", "asker": 7}).encode(), "asker"),
        (json.dumps({"texts": ["x"], "role": "query", "asker": "p" * 65}).encode(), "asker"),
    ],
)
def test_bad_requests_get_400_json(server: EmbedHTTPServer, body: bytes, fragment: str) -> None:
    status, payload = request(server.url + "/embed", body)
    assert status == 400 and fragment in payload["error"]


def test_unknown_route_404(server: EmbedHTTPServer) -> None:
    assert request(server.url + "/nope", b"{}")[0] == 404
    assert request(server.url + "/nope", method="GET")[0] == 404


def test_binds_loopback_by_default(server: EmbedHTTPServer) -> None:
    assert server.server_address[0] == "127.0.0.1"


@pytest.mark.slow
def test_cli_embed_server_serves_until_ctrl_c(minilm_models_dir: Path) -> None:
    # The command runs the library's serve_embed: it answers /embed, and SIGINT ends it with exit 0.
    exe = Path(sys.executable).with_name("cpersona")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CPERSONA_", "EMBEDDING_"))}
    env.update(
        CPERSONA_EMBEDDING_MODE="onnx", CPERSONA_AUTO_FETCH_MODEL="false", CPERSONA_UPDATE_CHECK="false"
    )
    cmd = [
        str(exe),
        "embed-server",
        "--model",
        "all-minilm-l6-v2",
        "--dir",
        str(minilm_models_dir),
        "--port",
        "0",
    ]
    # A shell without job control starts background commands with SIGINT ignored, and the child would
    # inherit that (Python then installs no KeyboardInterrupt handler): give it the default, as a terminal does.
    proc = subprocess.Popen(
        cmd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        match = re.search(r"at (http://127\.0\.0\.1:\d+)/embed", line)
        assert match, line
        status, payload = request(match.group(1) + "/embed", json.dumps({"texts": ["hello"]}).encode())
        assert status == 200 and payload["dimension"] == 384
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
