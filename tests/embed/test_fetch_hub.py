"""The hub download path end to end against a small fake hub on 127.0.0.1.

The real hub is unreachable here; this server answers the three requests
huggingface_hub makes (model info with file metadata, HEAD and GET of
``/<repo>/resolve/<rev>/<path>``) with the MiniLM files, so the real
``fetch_from_hub`` code downloads, verifies against the hub's hashes
(LFS sha256 and git blob ids), records and installs.
"""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from cpersona.embed.install.fetch import FetchError, fetch_from_hub
from cpersona.embed.integrity import git_blob_sha1, read_record, sha256_file
from cpersona.embed.registry import load_manifest
from cpersona.embed.runtime.onnx_backend import OnnxBackend

REPO_ID = "sentence-transformers/all-MiniLM-L6-v2"
COMMIT = "c0ffee" + "0" * 34


class FakeHub(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, files: dict[str, Path], lfs: set[str]) -> None:
        super().__init__(("127.0.0.1", 0), _HubHandler)
        self.files = files
        self.lfs = lfs
        self.served: dict[str, bytes] = {rel: p.read_bytes() for rel, p in files.items()}
        self.gets: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def etag(self, rel: str) -> str:
        path = self.files[rel]
        return sha256_file(path) if rel in self.lfs else git_blob_sha1(path)

    def sibling(self, rel: str) -> dict:
        path = self.files[rel]
        entry = {"rfilename": rel, "size": path.stat().st_size, "blobId": git_blob_sha1(path)}
        if rel in self.lfs:
            entry["lfs"] = {"size": path.stat().st_size, "sha256": sha256_file(path), "pointerSize": 134}
        return entry


class _HubHandler(BaseHTTPRequestHandler):
    server: FakeHub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        return None

    def _json(self, payload: dict) -> None:
        body = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _file(self, head: bool) -> None:
        prefix = f"/{REPO_ID}/resolve/"
        rest = self.path.split("?")[0][len(prefix) :]
        _rev, _, rel = rest.partition("/")
        if not self.path.startswith(prefix) or rel not in self.server.files:
            self.send_response(404)
            self.send_header("X-Error-Code", "EntryNotFound")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = self.server.served[rel]
        start = 0
        if not head and self.headers.get("Range", "").startswith("bytes="):
            start = int(self.headers["Range"][6:].split("-")[0])
        self.send_response(206 if start else 200)
        self.send_header("X-Repo-Commit", COMMIT)
        self.send_header("ETag", f'"{self.server.etag(rel)}"')
        self.send_header("Content-Length", str(len(data) - start))
        self.end_headers()
        if not head:
            self.server.gets.append(rel)
            self.wfile.write(data[start:])

    def do_HEAD(self) -> None:  # noqa: N802
        self._file(head=True)

    def do_GET(self) -> None:  # noqa: N802
        if self.path.startswith(f"/api/models/{REPO_ID}"):
            siblings = [self.server.sibling(rel) for rel in self.server.files]
            self._json({"id": REPO_ID, "sha": COMMIT, "siblings": siblings})
        else:
            self._file(head=False)


@pytest.fixture
def fake_hub(minilm_source_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    files = {
        "onnx/model.onnx": minilm_source_dir / "onnx" / "model.onnx",
        "tokenizer.json": minilm_source_dir / "tokenizer.json",
    }
    hub = FakeHub(files, lfs={"onnx/model.onnx"})
    thread = threading.Thread(target=hub.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    yield hub
    hub.shutdown()
    hub.server_close()
    thread.join(5)


def test_hub_download_installs_verified_model(fake_hub: FakeHub, tmp_path: Path) -> None:
    models = tmp_path / "models"
    stream = io.StringIO()
    target = fetch_from_hub("all-minilm-l6-v2", models, stream=stream)
    assert target == models / "all-minilm-l6-v2"
    assert sorted(fake_hub.gets) == ["onnx/model.onnx", "tokenizer.json"]
    record = read_record(target)
    assert record is not None
    assert record.source["kind"] == "hub" and record.source["revision"] == COMMIT
    assert record.files["onnx/model.onnx"].sha256 == fake_hub.etag("onnx/model.onnx")
    assert not (target / ".cache").exists()  # huggingface_hub's bookkeeping is not part of the install
    assert (
        sorted(p.name for p in models.iterdir() if p.name.startswith(".") and not p.name.endswith(".lock"))
        == []
    )
    assert "Apache-2.0" in stream.getvalue()
    OnnxBackend(load_manifest("all-minilm-l6-v2"), target).load()


def test_hub_bytes_not_matching_hub_hash_are_refused(fake_hub: FakeHub, tmp_path: Path) -> None:
    data = bytearray(fake_hub.served["onnx/model.onnx"])
    data[5000] ^= 0xFF  # same size, different content than the metadata's sha256
    fake_hub.served["onnx/model.onnx"] = bytes(data)
    models = tmp_path / "models"
    with pytest.raises(FetchError) as info:
        fetch_from_hub("all-minilm-l6-v2", models, stream=io.StringIO())
    assert info.value.kind == "hash_mismatch" and "hub says" in str(info.value)
    assert not (models / "all-minilm-l6-v2").exists()
    assert not (models / ".all-minilm-l6-v2.partial").exists()


def test_missing_file_on_hub(fake_hub: FakeHub, tmp_path: Path) -> None:
    del fake_hub.files["tokenizer.json"]
    with pytest.raises(FetchError) as info:
        fetch_from_hub("all-minilm-l6-v2", tmp_path / "models", stream=io.StringIO())
    assert info.value.kind == "not_found" and "tokenizer.json" in str(info.value)
    assert not (tmp_path / "models").exists()


def test_external_data_files_come_from_the_repo_listing(fake_hub: FakeHub, tmp_path: Path) -> None:
    # The manifest names no external-data file; the hub's listing holds one beside the graph.
    weights = tmp_path / "weights.bin"
    weights.write_bytes(b"\x01" * 4096)
    fake_hub.files["onnx/model.onnx_data"] = weights
    fake_hub.files["onnx/unrelated.onnx_data"] = weights  # another graph's data: not ours
    fake_hub.served = {rel: p.read_bytes() for rel, p in fake_hub.files.items()}
    assert load_manifest("all-minilm-l6-v2").file("onnx/model.onnx_data") is None
    target = fetch_from_hub("all-minilm-l6-v2", tmp_path / "models", stream=io.StringIO())
    assert sorted(fake_hub.gets) == ["onnx/model.onnx", "onnx/model.onnx_data", "tokenizer.json"]
    assert (target / "onnx" / "model.onnx_data").read_bytes() == weights.read_bytes()
    record = read_record(target)
    assert record is not None and "onnx/model.onnx_data" in record.files


def test_without_external_data_nothing_extra_is_fetched(fake_hub: FakeHub, tmp_path: Path) -> None:
    fetch_from_hub("all-minilm-l6-v2", tmp_path / "models", stream=io.StringIO())
    assert "onnx/model.onnx_data" not in fake_hub.gets
